package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// SessionHosts serves Hosts from internal/session: each conversation is a
// session under <data_dir>/sessions/ (transcript, state, archives), so it
// survives restarts, shows in `mcproxy sessions`, and a Compress is
// archived before anything leaves the model's view, as over MCP.
type SessionHosts struct {
	// Sessions opens the hosts. Its Options.Count should be Count.
	Sessions *session.Manager
	// Count is the gateway's token counter (CountTokens, which weighs
	// images by their estimate), for projecting a conversation that has no
	// session yet.
	Count noa.TokenCountFn
	// Config is noa's configuration for a window (the model's context
	// window, less what the request's system prompt and tools take): its
	// ModelContextLimit is set to that window. Nil means
	// noa.DefaultConfig(window).
	Config func(window int) noa.Config
	// Logger receives the idle sweep's reports (RunIdle); nil means none.
	Logger *zap.Logger
	// EngageAt is the recorded tokens at which a conversation of a given
	// message window engages (config.GatewayConfig.EngageAt, the same
	// function the gateway's Options.Config gives): noa's nudges wait for
	// it, since before the conversation engages no nudge reaches the
	// model, and one noa counted as shown would only delay the nudge the
	// engaging turn needs (firstround.go). Nil leaves noa's own floor.
	EngageAt func(window int) int

	idle idleHosts
}

// config is noa's configuration paced against window tokens.
func (s *SessionHosts) config(window int) noa.Config {
	cfg := noa.DefaultConfig(window)
	if s.Config != nil {
		cfg = s.Config(window)
		cfg.ModelContextLimit = window
	}
	if cfg.Truncate.Threshold <= 0 {
		// The noa section's config turns truncation off for MCP sessions;
		// the gateway must still never send more than the window holds.
		cfg.Truncate.Threshold = noa.DefaultConfig(window).Truncate.Threshold
	}
	n := &cfg.Nudge
	if s.EngageAt != nil && window > 0 {
		// The floor of every nudge, not only the first: a compression pays
		// from a size (compress_at_tokens), so later ones may come below
		// noa's own share of the window too.
		n.MinContextLimitPct = float64(s.EngageAt(window)) / float64(window)
	}
	n.MaxContextLimitPct = max(n.MaxContextLimitPct, n.MinContextLimitPct)
	n.EmergencyThresholdPct = max(n.EmergencyThresholdPct, n.MaxContextLimitPct)
	return cfg
}

// hostOptions open a conversation's session paced by cfg, and only one
// the gateway created (session.HostOptions.OnlyOwn): whatever id reaches
// it, the gateway never opens an MCP client's session.
func (s *SessionHosts) hostOptions(cfg *noa.Config) session.HostOptions {
	return session.HostOptions{Noa: cfg, OnlyOwn: true}
}

// Host opens (or restores) conversation id, paced against contextLimit when
// this call opens it. A host already open keeps the pacing it was opened
// with: a conversation's refs and blocks were made with it.
func (s *SessionHosts) Host(_ context.Context, id string, contextLimit int) (Host, error) {
	cfg := s.config(contextLimit)
	h, err := s.Sessions.HostWith(id, s.hostOptions(&cfg))
	if err != nil {
		return nil, err
	}
	s.idle.touch(id, time.Now())
	return sessionHost{h, s.used(id)}, nil
}

// RefuseUnrecorded reports whether a request whose conversation cannot be
// recorded is refused rather than forwarded unprojected (config
// noa.on_record_error "refuse"; see Gateway.unprojected).
func (s *SessionHosts) RefuseUnrecorded() bool { return s.Sessions.RefuseUnrecorded() }

// Peek projects pending as if recorded in conversation id, through the
// session's own Peek, which writes nothing. A conversation with no session
// yet (or id "") is projected in a throw-away in-memory host, so counting a
// new conversation's tokens creates no session directory.
func (s *SessionHosts) Peek(ctx context.Context, id string, contextLimit int, pending []noa.CoreMessage) (Turn, error) {
	if id == "" || !s.Sessions.Exists(id) {
		m := &MemoryHosts{Config: s.config(contextLimit), Count: s.Count}
		return m.Peek(ctx, "", contextLimit, pending)
	}
	cfg := s.config(contextLimit)
	h, err := s.Sessions.HostWith(id, s.hostOptions(&cfg))
	if err != nil {
		return Turn{}, err
	}
	s.idle.touch(id, time.Now())
	var fresh []session.Message
	for _, m := range pending {
		if !h.Has(m.ID) {
			fresh = append(fresh, session.Message{CoreMessage: m})
		}
	}
	t, err := h.Peek(ctx, fresh...)
	if err != nil {
		return Turn{}, err
	}
	return turnOf(sessionHost{h, s.used(id)}, t), nil
}

// Tools are Compress and read_archive as the session host defines them.
func (s *SessionHosts) Tools() []ToolDef {
	compress, _ := json.Marshal(noa.CompressToolSchema())
	read, _ := json.Marshal(session.ReadArchiveSchema())
	return []ToolDef{
		{Name: noa.CompressToolName, Description: noa.CompressToolDescription, Schema: compress},
		{Name: session.ReadArchiveToolName, Description: session.ReadArchiveDescription, Schema: read},
	}
}

// used returns the function that marks conversation id used now.
func (s *SessionHosts) used(id string) func() {
	return func() { s.idle.touch(id, time.Now()) }
}

// sessionHost is one conversation's session host as a gateway Host. Each
// call that changes the conversation marks it used (ReleaseIdle).
type sessionHost struct {
	h    *session.Host
	used func()
}

func (s sessionHost) Messages() []noa.CoreMessage { return s.h.Messages() }
func (s sessionHost) Has(id string) bool          { return s.h.Has(id) }

func (s sessionHost) Record(ctx context.Context, msgs ...noa.CoreMessage) error {
	s.used()
	_, err := s.h.Record(ctx, wrap(msgs)...)
	return err
}

func (s sessionHost) Turn(ctx context.Context) (Turn, error) {
	s.used()
	t, err := s.h.Turn(ctx)
	if err != nil {
		return Turn{}, err
	}
	return turnOf(s, t), nil
}

// turnOf is the gateway's Turn of a session turn: the refs of the messages
// in its view, looked up once each.
func turnOf(s sessionHost, t session.Turn) Turn {
	out := Turn{View: t.View, Nudge: t.Nudge, SystemPrompt: t.SystemPrompt, Refs: make(map[string]Ref, len(t.View)),
		Tokens: t.Total, Projected: t.Projected, Limit: t.ContextLimit, Engaged: t.Engaged}
	if t.NudgeDecision != nil {
		out.Ranges = t.NudgeDecision.CompressibleRanges
	}
	for _, m := range t.View {
		if r, ok := s.h.Ref(m.ID); ok {
			out.Refs[m.ID] = Ref{Ref: r.Ref, Tokens: r.Tokens}
		}
	}
	return out
}

func (s sessionHost) Engage(ctx context.Context) error {
	s.used()
	return s.h.Engage(ctx)
}

func (s sessionHost) Compress(ctx context.Context, call noa.CoreMessage) (noa.CoreMessage, error) {
	s.used()
	p, err := s.h.CompressCall(ctx, call, resultID(call))
	if err != nil {
		return noa.CoreMessage{}, err
	}
	return p.Result, nil
}

// ReadArchive answers the call with the archived page (its text, then where
// it sits and how to get the next) or with what to correct, and records the
// call and the answer.
func (s sessionHost) ReadArchive(ctx context.Context, call noa.CoreMessage) (noa.CoreMessage, error) {
	s.used()
	res := noa.CoreMessage{ID: resultID(call), Role: noa.RoleTool, ContentType: noa.CTToolResult,
		ToolName: session.ReadArchiveToolName, ToolCallID: call.ToolCallID}
	isError := false
	if a, err := session.ParseReadArchiveArgs([]byte(call.Text)); err != nil {
		res.Text, isError = err.Error(), true
	} else if page, err := s.h.ReadArchive(ctx, a); err != nil {
		if ctx.Err() != nil {
			return noa.CoreMessage{}, ctx.Err()
		}
		res.Text, isError = err.Error(), true
	} else {
		res.Text = page.Text
		if page.Note != "" {
			res.Text += "\n\n" + page.Note
		}
	}
	if _, err := s.h.Record(ctx, session.Message{CoreMessage: call}, session.Message{CoreMessage: res, IsError: isError}); err != nil {
		return noa.CoreMessage{}, fmt.Errorf("recording read_archive: %w", err)
	}
	return res, nil
}

// resultID is the id of the gateway's answer to its own tool call.
func resultID(call noa.CoreMessage) string { return call.ID + "/result" }

func wrap(msgs []noa.CoreMessage) []session.Message {
	out := make([]session.Message, len(msgs))
	for i, m := range msgs {
		out[i] = session.Message{CoreMessage: m}
	}
	return out
}
