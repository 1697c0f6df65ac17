// Package dashboard serves what a running mcproxy knows about itself: GET
// /status as JSON (each server's state, last error, tools and uptime; the
// noa sessions with their clients; the index size; the newest calls with
// per-server and per-tool counts, error rates and latency; the gateway's
// figures; the last refused config reload until one succeeds), GET
// /status/search (what retrieve_tools would answer) and a
// small web page at / that shows them (issues 18 and 30). The
// page is one embedded file with no external assets. The package reads
// through the functions of Source and changes nothing; the HTTP guard (Host,
// Origin, auth_token) is the front's, around it. The page holds no data and
// is served without auth_token; it takes the token from the URL fragment
// (#token=...), keeps it in the tab's sessionStorage and sends it as the
// X-Mcproxy-Token header on its requests. The token never sits in a cookie,
// which the browser would send to every service on the host (issue 26).
package dashboard

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/activity"
	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/metrics"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Paths the dashboard serves.
const (
	PathPage   = "/"
	PathStatus = "/status"
	PathSearch = "/status/search"
)

// Hit is one tool a search returns.
type Hit struct {
	ID          string  `json:"id"`
	Server      string  `json:"server"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// Session is one noa session as the page shows it.
type Session struct {
	ID string `json:"id"`
	// Client is the name the session's client gave in initialize ("" when
	// unknown: a gateway conversation, a session of an earlier run).
	Client string `json:"client,omitempty"`
	// Token names the client token the session's client connected with
	// (its name, never its value; "(admin)" for auth_token), "" when none
	// or unknown.
	Token        string    `json:"token,omitempty"`
	LastActive   time.Time `json:"last_active"`
	Messages     int       `json:"messages"`
	Blocks       int       `json:"blocks"`
	ActiveBlocks int       `json:"active_blocks"`
	TokensSaved  int       `json:"tokens_saved"`
	Bytes        int64     `json:"bytes"`
	// Recording is set while the session's records cannot be written
	// (a full disk, an I/O error; issue 26); nil while recording works.
	Recording *Recording `json:"recording,omitempty"`
}

// Recording is a session's recording while it fails: the last write's
// error and when the failures began. It is cleared by the next write that
// succeeds.
type Recording struct {
	State     string    `json:"state"` // RecordingFailing
	LastError string    `json:"last_error"`
	Since     time.Time `json:"since"`
}

// RecordingFailing is Recording.State: the session's last write failed.
const RecordingFailing = "failing"

// Source is where the dashboard reads from. Servers and Tools are
// required; a nil Search, Sessions or IndexSize leaves that part out.
type Source struct {
	Servers   func() []upstream.Status
	Tools     func() []config.Tool
	Search    func(ctx context.Context, query string, limit int) ([]Hit, error)
	Sessions  func() ([]Session, error)
	IndexSize func() (int, error)
	// Calls returns up to n of the newest calls, newest first, and
	// CallSummary the figures of every call kept; nil leaves them out (the
	// history is off).
	Calls       func(n int) []activity.Entry
	CallSummary func() activity.Summary
	// Gateway returns the gateway's figures since start; nil when the
	// gateway is off.
	Gateway func() metrics.Gateway
	// RefusedReload returns the last config reload that was refused, nil
	// once a later one succeeded; a nil func leaves it out.
	RefusedReload func() *RefusedReload
	// Version is mcproxy's version; Started is when it started.
	Version string
	Started time.Time
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

// Server is one upstream in /status.
type Server struct {
	Name      string     `json:"name"`
	Transport string     `json:"transport"`
	State     string     `json:"state"`
	LastError string     `json:"last_error,omitempty"`
	ToolCount int        `json:"tool_count"`
	Since     *time.Time `json:"since,omitempty"`
	// UptimeSeconds is how long a ready server has been ready (0 otherwise).
	UptimeSeconds int64      `json:"uptime_seconds"`
	RetryAt       *time.Time `json:"retry_at,omitempty"`
	Tools         []Tool     `json:"tools"`
}

// Tool is one exposed tool in /status.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Status is the /status document.
type Status struct {
	Version       string    `json:"version"`
	Started       time.Time `json:"started"`
	UptimeSeconds int64     `json:"uptime_seconds"`
	Servers       []Server  `json:"servers"`
	Sessions      []Session `json:"sessions"`
	SessionsError string    `json:"sessions_error,omitempty"`
	IndexSize     int       `json:"index_size"`
	// Calls are the newest calls, newest first; CallStats the figures of
	// every call the history keeps (nil with the history off).
	Calls     []activity.Entry  `json:"calls"`
	CallStats *activity.Summary `json:"call_stats,omitempty"`
	// Gateway is nil when the gateway is off.
	Gateway *Gateway `json:"gateway,omitempty"`
	// RefusedReload is the last config reload refused, kept until a later
	// reload succeeds: the log alone does not reach a user who runs
	// mcproxy under a client (issue 30). Nil when there is none.
	RefusedReload *RefusedReload `json:"refused_reload,omitempty"`
}

// RefusedReload is a config reload that was refused: when, the file, and
// why. The running configuration stays until the file is fixed.
type RefusedReload struct {
	Time   time.Time `json:"time"`
	Config string    `json:"config"`
	Error  string    `json:"error"`
}

// Gateway is the gateway's figures since start, with what they come to.
type Gateway struct {
	metrics.Gateway
	// SavedTokens is ClientTokens less ForwardedTokens (negative when the
	// hidden rounds cost more than compression saved); SavedShare is it
	// over ClientTokens.
	SavedTokens int64   `json:"saved_tokens"`
	SavedShare  float64 `json:"saved_share"`
	// CacheShare is the share of the provider's input tokens read from
	// its cache (0 without usage).
	CacheShare float64 `json:"cache_share"`
	// CostSavedShare estimates the share of input cost saved against going
	// straight: what was billed, in input-token equivalents at Anthropic's
	// multipliers (cache reads 0.1, cache writes 1.25; mcproxy's forwarded
	// count when the provider reported no usage), over what going straight
	// would have been billed at the full input price: ClientTokens, in the
	// provider's tokens when it reported usage (its count of what was
	// forwarded times ClientTokens / ForwardedTokens, since its tokenizer and
	// what it counts differ from mcproxy's).
	CostSavedShare float64 `json:"cost_saved_share"`
}

// gatewayFigures derives Gateway from the totals.
func gatewayFigures(g metrics.Gateway) *Gateway {
	out := &Gateway{Gateway: g, SavedTokens: g.ClientTokens - g.ForwardedTokens}
	if g.ClientTokens > 0 {
		out.SavedShare = float64(out.SavedTokens) / float64(g.ClientTokens)
	}
	usage := g.UsageInput + g.UsageCacheRead + g.UsageCacheWrite
	billed := float64(g.ForwardedTokens)
	if usage > 0 {
		out.CacheShare = float64(g.UsageCacheRead) / float64(usage)
		billed = float64(g.UsageInput) + 0.1*float64(g.UsageCacheRead) + 1.25*float64(g.UsageCacheWrite)
	}
	if g.ClientTokens > 0 {
		straight := float64(g.ClientTokens)
		if usage > 0 && g.ForwardedTokens > 0 {
			// Both in the provider's tokens.
			straight = float64(usage) * float64(g.ClientTokens) / float64(g.ForwardedTokens)
		}
		out.CostSavedShare = 1 - billed/straight
	}
	return out
}

// maxCalls bounds the calls /status lists.
const maxCalls = 100

// maxSessions bounds the sessions /status lists (the most recent first).
const maxSessions = 50

// New returns the handler for PathPage, PathStatus and PathSearch.
func New(src Source, log *zap.Logger) http.Handler {
	if log == nil {
		log = zap.NewNop()
	}
	if src.Now == nil {
		src.Now = time.Now
	}
	d := &dash{src: src, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathStatus, d.status)
	mux.HandleFunc("GET "+PathSearch, d.search)
	mux.HandleFunc("GET /{$}", d.page)
	return mux
}

type dash struct {
	src Source
	log *zap.Logger
}

//go:embed page.html
var page []byte

func (d *dash) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if _, err := r.Cookie(authheader.Cookie); err == nil {
		// Left by an older mcproxy; the browser would go on sending it to
		// every port of this host.
		http.SetCookie(w, &http.Cookie{Name: authheader.Cookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	if q := r.URL.Query(); q.Has("token") {
		// An old /?token= link: the same page with the token in the
		// fragment, which the browser keeps to itself.
		t := q.Get("token")
		q.Del("token")
		target := "/"
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		// Not http.Redirect: it would echo the token in an HTML body.
		w.Header().Set("Location", target+"#token="+url.QueryEscape(t))
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'")
	_, _ = w.Write(page)
}

// snapshot builds the /status document.
func (d *dash) snapshot() Status {
	now := d.src.Now()
	st := Status{Version: d.src.Version, Started: d.src.Started, UptimeSeconds: int64(now.Sub(d.src.Started).Seconds())}
	byServer := map[string][]Tool{}
	for _, t := range d.src.Tools() {
		byServer[t.Server] = append(byServer[t.Server], Tool{Name: t.Name, Description: t.Description})
	}
	for _, s := range d.src.Servers() {
		srv := Server{Name: s.Server, Transport: s.Transport, State: string(s.State), LastError: s.LastError, ToolCount: s.Tools, Tools: byServer[s.Server]}
		if srv.Tools == nil {
			srv.Tools = []Tool{}
		}
		if !s.Since.IsZero() {
			since := s.Since
			srv.Since = &since
			if s.State == upstream.StateReady {
				srv.UptimeSeconds = int64(now.Sub(since).Seconds())
			}
		}
		if !s.RetryAt.IsZero() {
			at := s.RetryAt
			srv.RetryAt = &at
		}
		st.Servers = append(st.Servers, srv)
	}
	if st.Servers == nil {
		st.Servers = []Server{}
	}
	st.Sessions = []Session{}
	if d.src.Sessions != nil {
		list, err := d.src.Sessions()
		if err != nil {
			st.SessionsError = err.Error()
		}
		// Sessions that cannot record come first: the list is cut short.
		slices.SortStableFunc(list, func(a, b Session) int {
			if (a.Recording == nil) != (b.Recording == nil) {
				if a.Recording != nil {
					return -1
				}
				return 1
			}
			return b.LastActive.Compare(a.LastActive)
		})
		st.Sessions = append(st.Sessions, list[:min(len(list), maxSessions)]...)
	}
	st.Calls = []activity.Entry{}
	if d.src.Calls != nil {
		st.Calls = d.src.Calls(maxCalls)
	}
	if d.src.CallSummary != nil {
		sum := d.src.CallSummary()
		st.CallStats = &sum
	}
	if d.src.Gateway != nil {
		st.Gateway = gatewayFigures(d.src.Gateway())
	}
	if d.src.RefusedReload != nil {
		st.RefusedReload = d.src.RefusedReload()
	}
	if d.src.IndexSize != nil {
		if n, err := d.src.IndexSize(); err == nil {
			st.IndexSize = n
		} else {
			d.log.Warn("counting the index for /status", zap.Error(err))
		}
	}
	return st
}

func (d *dash) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.snapshot())
}

func (d *dash) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if d.src.Search == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no tool search in direct mode"})
		return
	}
	if q == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "give a query as ?q=..."})
		return
	}
	limit := 0 // the configured retrieve_limit, as retrieve_tools uses
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 50 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "limit must be 1 to 50"})
			return
		}
		limit = n
	}
	hits, err := d.src.Search(r.Context(), q, limit)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if hits == nil {
		hits = []Hit{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "hits": hits})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
