// Package gateway is `mcproxy bench gateway`: it replays a long, tool-heavy
// agent conversation (gatewaytest.NewScenario: hundreds of model requests,
// large tool results, facts planted early and asked for again much later)
// through the model-API gateway's real HTTP handler, against a scripted
// model on loopback that obeys noa's nudges (gatewaytest.Agent), and
// reports what the gateway forwarded against what the client sent: input
// tokens per request with and without the gateway, the peak, the window,
// prompt-cache prefix stability, hidden rounds, and whether every later
// question could still be answered.
//
// The run is deterministic: the same options give the same report byte for
// byte, its timestamp aside. Like the rest of bench/, nothing imports it.
package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	gw "github.com/mcproxy/mcproxy/internal/gateway"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// Options configure a replay. Zero fields take the defaults noted.
type Options struct {
	// Scenario shapes the conversation; see DefaultScenario.
	Scenario gatewaytest.ScenarioOptions
	// Model names the model the client asks for (default
	// claude-sonnet-4-5); Window is its input window in tokens (default:
	// the gateway's built-in window for Model).
	Model  string
	Window int
	// Tokenizer counts every token figure, the gateway's pacing included
	// (default cl100k_base).
	Tokenizer string
	// NoCacheControl makes the client set no prompt-cache breakpoints;
	// by default it sets them as Claude Code does.
	NoCacheControl bool
	// Progress receives a line every 25 steps; nil is quiet.
	Progress io.Writer
}

// DefaultScenario is the replay `mcproxy bench gateway` runs without
// flags: 60 reading steps of 4 log files of 6 to 30 KB each (240
// read_file calls), 12 facts in the first 12 files, each asked for once
// over the last third.
var DefaultScenario = gatewaytest.ScenarioOptions{Tasks: 60, FilesPerTask: 4, MinFileBytes: 6000, MaxFileBytes: 30000, Facts: 12, Questions: 12, Seed: 1}

// conversation names the replayed conversation (the X-Mcproxy-Session
// header). The gateway gives it an id of its own (random), which nothing
// the model reads or the report holds depends on.
const conversation = "bench"

// clock is the hosts' clock: fixed, so archives and states repeat.
func clock() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }

func (o *Options) defaults() error {
	if o.Scenario == (gatewaytest.ScenarioOptions{}) {
		o.Scenario = DefaultScenario
	}
	if o.Model == "" {
		o.Model = "claude-sonnet-4-5"
	}
	if o.Tokenizer == "" {
		o.Tokenizer = config.DefaultTokenizer
	}
	if o.Window == 0 {
		cfg := config.GatewayConfig{}
		cfg.ApplyDefaults()
		o.Window, _ = cfg.ContextWindow(o.Model)
	}
	if o.Window < 1000 {
		return fmt.Errorf("a window of %d tokens is too small to replay anything (at least 1000)", o.Window)
	}
	return nil
}

// Run replays the scenario and measures it.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	tk, err := tokens.New(opts.Tokenizer)
	if err != nil {
		return nil, err
	}
	count := newCounter(tk)

	up := gatewaytest.New(gatewaytest.Agent)
	defer up.Close()
	// The one place this entry point builds its hosts: the on-disk session
	// hosts mcproxy serve uses, in a directory of the run's own.
	dir, err := os.MkdirTemp("", "mcproxy-bench-gateway-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sessions := session.NewManager(session.Options{Dir: dir, Count: gw.CountTokens(tk.Count), Now: clock})
	defer sessions.Close()
	hosts := &gw.SessionHosts{Sessions: sessions, Count: gw.CountTokens(tk.Count)}
	g, err := gw.New(gw.Options{Hosts: hosts, Config: config.GatewayConfig{Enabled: true,
		Anthropic: config.GatewayProvider{BaseURL: up.URL},
		Models:    map[string]config.GatewayModel{opts.Model: {ContextWindow: opts.Window}}}})
	if err != nil {
		return nil, err
	}
	front := httptest.NewServer(server.Guard(g, server.HTTPOptions{}))
	defer front.Close()

	sc := gatewaytest.NewScenario(opts.Scenario)
	rep := newReport(opts, sc)
	m := &meter{count: count, rep: rep}
	var replayErr error
	results, err := gatewaytest.Replay(ctx, sc, gatewaytest.ReplayOptions{
		URL:          front.URL + "/v1/messages",
		Model:        opts.Model,
		System:       "You are a careful analyst of service logs. Read what the user asks for with read_file and answer briefly.",
		CacheControl: !opts.NoCacheControl,
		Header:       map[string]string{"x-api-key": "bench-key", gw.HeaderSession: conversation},
		OnRequest: func(r gatewaytest.ReplayRequest) {
			if r.Err != nil || replayErr != nil {
				return // Replay reports the first; nothing after it is measured
			}
			if replayErr = m.request(r, up.Drain()); replayErr != nil {
				return
			}
			// The model's own calls, as the conversation's host recorded them.
			h, err := conversationHost(ctx, hosts, dir, opts.Window)
			if err != nil {
				replayErr = err
				return
			}
			m.calls(h.Messages())
			if opts.Progress != nil && r.Step%25 == 0 && (len(m.rep.Turns) == 1 || m.rep.Turns[len(m.rep.Turns)-2].Step != r.Step) {
				t := m.rep.Turns[len(m.rep.Turns)-1]
				fmt.Fprintf(opts.Progress, "step %d of %d: client %d tokens, forwarded %d\n", r.Step, len(sc.Steps), t.Unmanaged, t.Forwarded)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("replaying: %w", err)
	}
	if replayErr != nil {
		return nil, replayErr
	}
	for i, st := range sc.Steps {
		if !st.Question() {
			continue
		}
		q := Question{Step: i, Fact: st.Fact, Answer: results[i].Answer, Answered: results[i].Answered, Via: "view"}
		for _, t := range rep.Turns {
			if t.Step == i && t.ReadArchive > 0 {
				q.Via = "read_archive"
			}
		}
		rep.Questions = append(rep.Questions, q)
	}
	rep.finish()
	return rep, nil
}

// conversationHost is the host of the replay's one conversation, the one
// session under dir (its id is the gateway's choice).
func conversationHost(ctx context.Context, hosts *gw.SessionHosts, dir string, window int) (gw.Host, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the replayed conversation: %w", err)
	}
	if len(entries) != 1 {
		return nil, fmt.Errorf("finding the replayed conversation: the replay made %d sessions, want 1", len(entries))
	}
	return hosts.Host(ctx, entries[0].Name(), window)
}

// meter measures each request as it happens.
type meter struct {
	count *counter
	rep   *Report
	// fixed is the client's system prompt and tools; counted is how many
	// of the client's messages are in sum.
	fixed, counted, sum int
	prev                gatewaytest.Prefix
	havePrev            bool
	// compress and archive count the model's Compress and read_archive
	// calls recorded so far.
	compress, archive int
}

// calls credits the last turn with the model's calls the host recorded
// since the turn before.
func (m *meter) calls(msgs []noa.CoreMessage) {
	compress, archive := 0, 0
	for _, msg := range msgs {
		if msg.ContentType != noa.CTToolCall {
			continue
		}
		switch msg.ToolName {
		case noa.CompressToolName:
			compress++
		case gw.ReadArchiveTool:
			archive++
		}
	}
	t := &m.rep.Turns[len(m.rep.Turns)-1]
	t.Compress, t.ReadArchive = compress-m.compress, archive-m.archive
	m.compress, m.archive = compress, archive
}

// request measures one client request and the upstream requests it made.
func (m *meter) request(r gatewaytest.ReplayRequest, upstream []*gatewaytest.Request) error {
	if m.rep.Turns == nil {
		n, err := m.count.request(r.Body, false)
		if err != nil {
			return err
		}
		m.fixed = n
		for _, msg := range r.Messages {
			m.fixed -= m.count.raw(msg)
		}
		m.fixed = max(m.fixed, 0)
	}
	for _, msg := range r.Messages[m.counted:] {
		m.sum += m.count.raw(msg)
	}
	m.counted = len(r.Messages)
	t := Turn{N: len(m.rep.Turns) + 1, Step: r.Step, Unmanaged: m.fixed + m.sum, Upstream: len(upstream)}
	for _, u := range upstream {
		n, err := m.count.request(u.Body, true)
		if err != nil {
			return fmt.Errorf("upstream request %d: %w", u.Seq, err)
		}
		t.Forwarded += n
		t.Peak = max(t.Peak, n)
		p, err := u.Prefix()
		if err != nil {
			return fmt.Errorf("upstream request %d: %w", u.Seq, err)
		}
		if m.havePrev {
			m.rep.Totals.PrefixPairs++
			if m.prev.Stable(p) {
				m.rep.Totals.PrefixStable++
			}
		}
		m.prev, m.havePrev = p, true
	}
	m.rep.Turns = append(m.rep.Turns, t)
	return nil
}

// counter counts tokens of JSON values, memoised by content: the same
// message is sent on every request after its first.
type counter struct {
	tk   *tokens.Counter
	memo map[[32]byte]int
}

func newCounter(tk *tokens.Counter) *counter {
	return &counter{tk: tk, memo: map[[32]byte]int{}}
}

// raw counts one JSON value as the text of its JSON.
func (c *counter) raw(b []byte) int {
	k := sha256.Sum256(b)
	if n, ok := c.memo[k]; ok {
		return n
	}
	n := c.tk.Count(string(b))
	c.memo[k] = n
	return n
}

// request counts what a Messages API request puts before the model: its
// system prompt, each tool and each message, each as its JSON. Both sides
// of the comparison are counted so. Cache breakpoints are left out of the
// count when strip is set (they are not prompt).
func (c *counter) request(body []byte, strip bool) (int, error) {
	var req struct {
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, fmt.Errorf("reading a request: %w", err)
	}
	n := 0
	if len(req.System) > 0 {
		n += c.raw(req.System)
	}
	for _, t := range req.Tools {
		n += c.raw(t)
	}
	for _, msg := range req.Messages {
		if strip {
			msg = stripCacheControl(msg)
		}
		n += c.raw(msg)
	}
	return n, nil
}

// stripCacheControl removes the cache_control markers of a message's
// content blocks (and tool results' inner blocks), as the client's own
// messages are counted without them.
func stripCacheControl(msg json.RawMessage) json.RawMessage {
	if !containsCacheControl(msg) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(m["content"], &blocks) != nil {
		return msg
	}
	for _, b := range blocks {
		delete(b, "cache_control")
	}
	m["content"], _ = json.Marshal(blocks)
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

func containsCacheControl(b []byte) bool {
	return bytes.Contains(b, []byte(`"cache_control"`))
}
