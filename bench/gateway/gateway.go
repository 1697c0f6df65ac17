// Package gateway is `mcproxy bench gateway`: it replays real agent runs
// (bench/trajectory) as the requests their client sent, and costs them
// under prompt caching with every policy a user could pick (issue 27):
//
//   - straight: the requests as the client built them, no gateway;
//   - gateway: through the model-API gateway's real HTTP handler (gw.New
//     behind mcptransport.Guard) to a scripted model on loopback (coop) that
//     answers each request with the run's next assistant turn, obeys the
//     gateway's nudges with Compress calls and reads archived messages
//     back with read_archive when its next call needs a fact it no longer
//     sees; every upstream request, hidden rounds included, is costed;
//   - clear_tool_uses@100K and @50%: Anthropic's context editing
//     (clear_tool_uses_20250919) at its default trigger of 100K input
//     tokens and at half the window, keeping the 3 newest tool uses;
//   - compact@95%: a client that, before a request over 95% of the window,
//     asks for a summary of the whole conversation and starts again from
//     the task and the summary, as Claude Code does.
//
// Each run is replayed at each window (200K, 100K and 40K by default) and
// the long session (trajectory.Store.LongSession) at 200K. The client sets
// cache_control breakpoints as Claude Code does: on the system prompt and
// on the last block of the last message. The cache model (cache.charge)
// and the token count (counter.tokens) are documented where they are
// defined; prices come from config.GatewayConfig.Prices for the model.
//
// The run is deterministic: the same runs and options give the same
// report byte for byte, its timestamp aside. Like the rest of bench/,
// nothing imports it.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/bench/trajectory"
	"github.com/mcproxy/mcproxy/internal/config"
	gw "github.com/mcproxy/mcproxy/internal/gateway"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/loopback"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// DefaultWindows are the windows every run is replayed at.
var DefaultWindows = []int{200000, 100000, 40000}

// SessionWindow is the window the long session is replayed at.
const SessionWindow = 200000

// Options configure a bench. Zero fields take the defaults noted.
type Options struct {
	// Trajectories says where the runs are (trajectory.Open: Dir, else
	// $MCPROXY_TRAJECTORIES, else the built-in runs).
	Trajectories trajectory.Options
	// Runs keeps only the runs whose id contains one of these; empty keeps
	// all.
	Runs []string
	// Windows are the windows each run is replayed at (DefaultWindows).
	Windows []int
	// SessionParts are the runs the long session joins
	// (trajectory.LongSessionParts); NoSession leaves the session out.
	SessionParts []string
	NoSession    bool
	// SessionWindow is the session's window (SessionWindow).
	SessionWindow int
	// Model is the model the client asks for (claude-sonnet-4-5); Prices
	// its prices (nil: the built-in table's for Model).
	Model  string
	Prices *config.ModelPrices
	// Tokenizer counts every token figure, the gateway's pacing included
	// (cl100k_base). Count, when set, replaces it for the bench's own
	// figures (tests use it to compute costs by hand).
	Tokenizer string
	Count     func(string) int
	// Progress receives a line per replay; nil is quiet.
	Progress io.Writer
}

func (o *Options) defaults() error {
	if len(o.Windows) == 0 {
		o.Windows = DefaultWindows
	}
	if len(o.SessionParts) == 0 {
		o.SessionParts = trajectory.LongSessionParts
	}
	if o.SessionWindow == 0 {
		o.SessionWindow = SessionWindow
	}
	if o.Model == "" {
		o.Model = "claude-sonnet-4-5"
	}
	if o.Tokenizer == "" {
		o.Tokenizer = config.DefaultTokenizer
	}
	if o.Prices == nil {
		p, ok := config.GatewayConfig{}.Prices(o.Model)
		if !ok {
			return fmt.Errorf("no built-in prices for model %q: set gateway.models.%s.prices (input, output, cache_read, cache_write in USD per million tokens)", o.Model, o.Model)
		}
		o.Prices = &p
	}
	for _, w := range append(slices.Clone(o.Windows), o.SessionWindow) {
		if w < config.MinContextWindow || w > config.MaxContextWindow {
			return fmt.Errorf("a window of %d tokens is out of range: want %d to %d (the gateway's context_window bounds)", w, config.MinContextWindow, config.MaxContextWindow)
		}
	}
	return nil
}

// clock is the hosts' clock: fixed, so archives and states repeat.
func clock() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }

// Run replays every selected run at every window and reports.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	tk, err := tokens.New(opts.Tokenizer)
	if err != nil {
		return nil, err
	}
	count := opts.Count
	if count == nil {
		count = tk.Count
	}
	store := trajectory.Open(opts.Trajectories)
	all, err := store.LoadAll()
	if err != nil {
		return nil, fmt.Errorf("finding the agent runs to replay (give their directory with --trajectories): %w", err)
	}
	var runs []*trajectory.Trajectory
	for _, t := range all {
		if len(opts.Runs) == 0 || slices.ContainsFunc(opts.Runs, func(s string) bool { return strings.Contains(t.ID, s) }) {
			runs = append(runs, t)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no run in %s matches --runs %s", store.Dir, strings.Join(opts.Runs, ","))
	}
	rep := newReport(opts)
	b := &bench{opts: opts, tk: tk, count: newCounter(count)}
	for _, t := range runs {
		rep.Runs = append(rep.Runs, RunInfo{ID: t.ID, Agent: t.Agent, Model: t.Model, Task: t.Task, Steps: len(t.Steps), Facts: len(t.Facts())})
		for _, w := range opts.Windows {
			c, err := b.replay(ctx, t, w)
			if err != nil {
				return nil, err
			}
			rep.Cases = append(rep.Cases, *c)
		}
	}
	if !opts.NoSession {
		s, err := store.Session(trajectory.LongSessionID, opts.SessionParts...)
		if err != nil {
			return nil, fmt.Errorf("building the long session (leave it out with --no-session): %w", err)
		}
		c, err := b.replay(ctx, s, opts.SessionWindow)
		if err != nil {
			return nil, err
		}
		c.Session = true
		rep.Cases = append(rep.Cases, *c)
	}
	rep.finish()
	return rep, nil
}

type bench struct {
	opts  Options
	tk    *tokens.Counter
	count *counter
}

// replay measures one run at one window under every policy.
func (b *bench) replay(ctx context.Context, t *trajectory.Trajectory, window int) (*Case, error) {
	r, err := newRun(t, b.opts.Model, b.count)
	if err != nil {
		return nil, err
	}
	c := &Case{Trajectory: t.ID, Window: window, Steps: len(t.Steps), Facts: len(r.facts)}
	log := func(k int) string { return stepLine(t, k, nil) }
	for _, name := range Policies {
		m := newMeter(name, b.count, window)
		switch name {
		case Straight:
			err = r.straight(m)
		case Gateway:
			err = b.gateway(ctx, r, m)
		case ClearAt100:
			err = r.clear(m, clearTrigger)
		case ClearAtLow:
			err = r.clear(m, window/2)
		case Compact95:
			err = r.compact(m, log)
		}
		if err != nil {
			return nil, fmt.Errorf("replaying %s at a %d-token window, %s: %w", t.ID, window, name, err)
		}
		c.Policies = append(c.Policies, m.res)
	}
	c.finish(*b.opts.Prices)
	if b.opts.Progress != nil {
		g := c.Policies[1]
		fmt.Fprintf(b.opts.Progress, "%s at %d: gateway %.4f USD (%.3fx straight), peak %d, %d hidden rounds\n",
			t.ID, window, g.CostUSD, g.CostVsStraight, g.Peak, g.HiddenRounds)
	}
	return c, nil
}

// gateway replays r through the gateway to a coop model.
func (b *bench) gateway(ctx context.Context, r *run, m *meter) error {
	model := newCoop(r.t, b.count, r.facts)
	up := scriptedmodel.New(model.answer)
	defer up.Close()
	// The one place this entry point builds its hosts: the on-disk session
	// hosts mcproxy serve uses, in a directory of the replay's own.
	dir, err := os.MkdirTemp("", "mcproxy-bench-gateway-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sessions := session.NewManager(session.Options{Dir: dir, Count: gw.CountTokens(b.tk.Count), Now: clock})
	defer sessions.Close()
	cfg := config.GatewayConfig{Enabled: true,
		Anthropic: config.GatewayProvider{BaseURL: up.URL},
		Models:    map[string]config.GatewayModel{b.opts.Model: {ContextWindow: m.window}}}
	hosts := &gw.SessionHosts{Sessions: sessions, Count: gw.CountTokens(b.tk.Count), EngageAt: cfg.EngageAt}
	g, err := gw.New(gw.Options{Hosts: hosts, Config: cfg})
	if err != nil {
		return err
	}
	defer g.Close()
	front := loopback.NewServer(mcptransport.Guard(g, mcptransport.HTTPOptions{}))
	defer front.Close()

	for k := range r.t.Steps {
		answer, err := send(ctx, front.URL+"/v1/messages", r.client.body(r.at(k)), r.t.ID)
		if err != nil {
			return fmt.Errorf("step %d: %w", k, err)
		}
		if !sameTurn(answer, r.t.AnthropicAssistant(k)) {
			m.res.OffScript++
		}
		ups := up.Drain()
		model.mu.Lock()
		outs := make([]int, len(ups))
		for i, u := range ups {
			outs[i] = model.out[u.Seq]
			delete(model.out, u.Seq)
		}
		model.mu.Unlock()
		n := 0
		for i, u := range ups {
			if u.Path != "/v1/messages" {
				continue
			}
			n++
			if err := m.request(u.Body, outs[i]); err != nil {
				return fmt.Errorf("step %d, upstream request %d: %w", k, u.Seq, err)
			}
		}
		m.res.HiddenRounds += max(n-1, 0)
		m.endTurn()
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	m.res.OffScript += len(model.off)
	m.res.CompressCalls, m.res.ReadArchiveCalls, m.res.ArchiveSearches = model.compress, model.reads, model.searches
	for _, f := range r.facts {
		switch model.found[f.Text] {
		case inView:
			m.res.FactsInView++
		case viaArchive:
			m.res.FactsRecovered++
		default:
			m.res.FactsLost++
		}
	}
	return nil
}

// send posts one client request, as Claude Code would, and returns the
// answer's body.
func send(ctx context.Context, url string, body []byte, conv string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", "bench-key")
	req.Header.Set(gw.HeaderSession, conv)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the gateway answered %d: %s", resp.StatusCode, b)
	}
	return b, nil
}

// sameTurn reports whether an answer's content is the run's turn: the same
// text and the same calls under the same ids.
func sameTurn(answer []byte, want trajectory.AnthropicMessage) bool {
	var a struct {
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if json.Unmarshal(answer, &a) != nil || len(a.Content) != len(want.Content) {
		return false
	}
	for i, b := range a.Content {
		w := want.Content[i]
		if b.Type != w.Type || b.Text != w.Text || b.ID != w.ID || b.Name != w.Name {
			return false
		}
		if w.Type == "tool_use" {
			var x, y any
			if json.Unmarshal(b.Input, &x) != nil || json.Unmarshal(w.Input, &y) != nil || !jsonEqual(x, y) {
				return false
			}
		}
	}
	return true
}

func jsonEqual(x, y any) bool {
	a, _ := json.Marshal(x)
	b, _ := json.Marshal(y)
	return bytes.Equal(a, b)
}
