package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/metrics"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// exchange is one projected client request in flight.
type exchange struct {
	g      *Gateway
	w      http.ResponseWriter
	r      *http.Request
	p      *provider
	path   string
	raw    []byte // the client's body, forwarded as it came if projection fails
	q      *request
	d      dialect
	h      Host
	conv   string
	stream bool
	// ours are the tools the gateway added (a client tool of the same name
	// stays the client's).
	ours map[string]bool
	// calls holds, by tool call id, the assistant message of a hidden round
	// that carried thinking, sent back verbatim in the continuation (an
	// Anthropic model with thinking on must get its thinking back, signed,
	// with its tool call). Other hidden calls are rendered from the host's
	// view, as every later request renders them.
	calls map[string]json.RawMessage
	usage usageSum
	// clientIncludeUsage: the client asked for OpenAI's usage chunk.
	clientIncludeUsage bool
	// lastRound makes the next round the final one (run could not record
	// a failed call, so the model cannot be shown it).
	lastRound bool
	// shown is what hidden rounds delivered to the client that a JSON
	// answer must still carry (see runStream): Anthropic content blocks,
	// or OpenAI message text.
	shown     []json.RawMessage
	shownText string
	// figures are the request's counts for Options.Metrics.
	figures metrics.Gateway
}

// sent counts a round about to be sent for turn t: the client's tokens
// with the first, and what goes upstream with every one.
func (x *exchange) sent(t Turn, round int) {
	if round == 0 {
		x.figures.Projected = 1
		x.figures.ClientTokens = int64(t.Tokens)
	} else {
		x.figures.HiddenRounds++
	}
	if t.Engaged {
		x.figures.ForwardedTokens += int64(t.Projected)
	} else {
		x.figures.ForwardedTokens += int64(t.Tokens)
	}
}

// report hands the request's figures to Options.Metrics, the usage the
// provider reported summed over the rounds.
func (x *exchange) report() {
	f := x.figures
	if x.p.api == anthropicAPI {
		f.UsageInput = x.usage["input_tokens"]
		f.UsageCacheRead = x.usage["cache_read_input_tokens"]
		f.UsageCacheWrite = x.usage["cache_creation_input_tokens"]
	} else {
		// OpenAI's cached share sits in prompt_tokens_details, which the
		// sum does not reach: prompt_tokens counts it all as input.
		f.UsageInput = x.usage["prompt_tokens"]
	}
	x.g.metrics.GatewayRequest(string(x.p.api), f)
}

// project serves a model request through noa. Anything that fails before
// the client has received a byte falls back to forwarding the request as it
// came.
func (g *Gateway) project(w http.ResponseWriter, r *http.Request, p *provider, path string, body []byte) {
	in, ok := g.parseProjected(w, r, p, path, body)
	if !ok {
		g.metrics.GatewayRequest(string(p.api), metrics.Gateway{})
		return
	}
	conv, h, release, err := g.open(r.Context(), in.scope, in.q, in.limit)
	if err != nil {
		g.metrics.GatewayRequest(string(p.api), metrics.Gateway{})
		if r.Context().Err() == nil {
			g.unprojected(w, r, p, path, body, "", err)
		}
		return
	}
	defer release()
	h = engaging{Host: h, core: in.q.core, at: g.cfg.EngageAt}
	x := &exchange{g: g, w: w, r: r, p: p, path: path, raw: body, q: in.q, d: in.d, h: h, conv: conv, stream: in.head.Stream,
		ours: g.ours(in.q), calls: map[string]json.RawMessage{}, usage: usageSum{}, clientIncludeUsage: in.head.IncludeUsage}
	defer x.report()
	if x.stream {
		x.runStream()
		return
	}
	x.runJSON()
}

// projected is a client request taken apart for projection.
type projected struct {
	q     *request
	d     dialect
	head  requestHead
	scope Scope // the client's credential and session header
	limit int   // the window left to the messages (messageWindow)
}

// requestHead is what the gateway reads of a request's top level besides
// its messages.
type requestHead struct {
	Model  string
	Stream bool
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
}

// readHead reads the request's requestHead.
func (q *request) readHead() requestHead {
	h := requestHead{Stream: isTrue(q.top["stream"])}
	h.Model, _ = decodeString(q.top["model"])
	if opts, ok := objectFields(q.top["stream_options"]); ok {
		h.IncludeUsage = isTrue(opts.vals["include_usage"])
	}
	return h
}

// isTrue reports whether raw is the JSON literal true.
func isTrue(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "true" }

// parseProjected takes a request apart for projection. When it reports
// false the request has been answered: an invalid session header with a
// provider-style 400, a request over gateway.limits.max_json_depth with a
// 400 naming it, a request the gateway cannot read (the provider judges
// it) by forwarding it as it came.
func (g *Gateway) parseProjected(w http.ResponseWriter, r *http.Request, p *provider, path string, body []byte) (projected, bool) {
	caller, _ := clientauth.FromContext(r.Context())
	in := projected{scope: Scope{Cred: tokenScope(credentialScope(p.api, r.Header, g.authToken), caller.Token), Name: r.Header.Get(HeaderSession)}}
	if in.scope.Name != "" && !ValidSessionName(in.scope.Name) {
		writeError(w, p.api, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
			"mcproxy gateway: %s must be 1 to 100 of the characters A-Z a-z 0-9 _ . -", HeaderSession))
		return in, false
	}
	parse, d := parseAnthropic, dialect(anthropicDialect{})
	if p.api == openaiAPI {
		parse, d = parseOpenAI, openaiDialect{}
	}
	q, err := parse(r.Context(), body, g.cfg.Limits.MaxJSONDepth)
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		writeError(w, p.api, http.StatusBadRequest, "invalid_request_error", refused.msg)
		return in, false
	case r.Context().Err() != nil:
		return in, false // the client is gone
	}
	if err != nil || len(q.core) == 0 {
		// Not ours to judge: the provider answers a malformed request.
		g.forward(w, r, p, path, body)
		return in, false
	}
	in.q, in.d = q, d
	in.head = q.readHead()
	window, _ := (*g.profiles.Load())[caller.Profile].ContextWindow(g.cfg, in.head.Model)
	in.limit = g.messageWindow(q, window)
	return in, true
}

// messageWindow is the part of a model's window left to the conversation's
// messages, which is what noa paces: the window less what the request
// spends outside them (the system prompt, the client's tools and the
// gateway's), estimated at a quarter token per byte. A request whose fixed
// part takes most of the window still leaves its messages a quarter of it,
// so noa never paces against nothing.
func (g *Gateway) messageWindow(q *request, window int) int {
	fixed := len(q.top["system"]) + len(q.top["tools"])
	for _, m := range q.head {
		fixed += len(m) // OpenAI's system messages
	}
	for _, t := range g.hosts.Tools() {
		fixed += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return max(window-fixed/4, window/4)
}

// ours are the hosts' tools the gateway adds to request q: all of them but
// those the client offers under the same name, which stay the client's.
func (g *Gateway) ours(q *request) map[string]bool {
	ours := map[string]bool{}
	for _, t := range g.hosts.Tools() {
		ours[t.Name] = true
	}
	for _, name := range q.toolNames() {
		delete(ours, name)
	}
	return ours
}

// countTokens answers POST /v1/messages/count_tokens for what the model
// would read: the body is projected exactly as a /v1/messages request with
// it would be (the conversation's summaries, ref tags and nudge, noa's
// prompt and tools once it is engaged or would engage with it; the body
// as it came before), recording and changing nothing, and the projection
// is counted upstream. Like a model request, a failure to project falls back
// to counting the body as it came.
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request, p *provider) {
	body, ok := g.readBody(w, r, p)
	if !ok {
		return
	}
	path := r.URL.Path
	if g.hosts == nil {
		g.forward(w, r, p, path, body)
		return
	}
	in, ok := g.parseProjected(w, r, p, path, body)
	if !ok {
		return
	}
	conv, _, known := g.convs.Match(in.scope, in.q.ids())
	if !known {
		conv = ""
	}
	t, err := g.hosts.Peek(r.Context(), conv, in.limit, in.q.core)
	if err != nil {
		if r.Context().Err() == nil {
			g.log.Error("projection failed; counting unprojected", zap.String("api", string(p.api)), zap.String("session_id", conv), zap.Error(err))
			g.forward(w, r, p, path, body)
		}
		return
	}
	t.Engaged = t.Engaged || engageDue(t, in.q.core, g.cfg.EngageAt)
	x := &exchange{g: g, p: p, raw: body, q: in.q, d: in.d, ours: g.ours(in.q)}
	g.forward(w, r, p, path, x.build(t, false))
}

// open finds the request's conversation, records what its host does not
// hold yet, and returns the host with the conversation locked until release
// is called.
func (g *Gateway) open(ctx context.Context, scope Scope, q *request, limit int) (string, Host, func(), error) {
	ids := q.ids()
	for attempt := 0; ; attempt++ {
		conv, known, ok := g.convs.Match(scope, ids)
		if !ok {
			conv = newID()
		}
		release, err := g.lock(ctx, conv)
		if err != nil {
			return "", nil, nil, err
		}
		// Another request of the conversation may have moved it on while
		// this one waited: match again under the lock.
		if again, k2, ok2 := g.convs.Match(scope, ids); ok && (!ok2 || again != conv || k2 != known) && attempt < 3 {
			release()
			continue
		}
		h, err := g.hosts.Host(ctx, conv, limit)
		if err != nil {
			release()
			return "", nil, nil, fmt.Errorf("opening conversation %s: %w", conv, err)
		}
		if known > 0 && !h.Has(ids[known-1]) {
			// The index knows more than the host holds (a host that lost
			// its state, an index that outlived it): record what is missing.
			known = 0
		}
		for known < len(ids) && h.Has(ids[known]) {
			known++
		}
		if known < len(ids) {
			if err := h.Record(ctx, q.core[known:]...); err != nil {
				release()
				return "", nil, nil, fmt.Errorf("recording conversation %s: %w", conv, err)
			}
		}
		if err := g.convs.Advance(conv, scope, ids[len(ids)-1]); err != nil {
			// The host holds the messages; the next request finds them by
			// Has even if it starts from an older point.
			g.log.Warn("updating the conversation index", zap.String("session_id", conv), zap.Error(err))
		}
		return conv, h, release, nil
	}
}

// ids are the request's part ids, in order.
func (q *request) ids() []string {
	ids := make([]string, len(q.core))
	for i, m := range q.core {
		ids[i] = m.ID
	}
	return ids
}

// toolNames lists the names of the request's tools.
func (q *request) toolNames() []string {
	var tools []struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(q.top["tools"], &tools)
	var out []string
	for _, t := range tools {
		out = append(out, t.Name+t.Function.Name)
	}
	return out
}

// build is the body sent upstream for turn t: the projected messages, noa's
// system prompt and tools added, everything else as the client sent it. In
// the final round (after hidden rounds, with none left) tool_choice is
// "none", so the model answers for the client. A conversation not engaged
// gets the client's body as it came (engage.go).
func (x *exchange) build(t Turn, final bool) []byte {
	if !t.Engaged {
		// Nothing of the gateway's is offered, so every tool the model
		// calls is the client's.
		x.ours = nil
		return x.raw
	}
	top := make(map[string]json.RawMessage, len(x.q.top)+2)
	for k, v := range x.q.top {
		top[k] = v
	}
	msgs := x.q.render(x.d, projection{View: t.View, Refs: t.Refs, Nudge: t.Nudge, Calls: x.calls})
	if t.SystemPrompt != "" {
		if x.p.api == anthropicAPI {
			top["system"] = appendSystem(top["system"], t.SystemPrompt)
		} else {
			msgs = openaiSystem(msgs, len(x.q.head), t.SystemPrompt)
		}
	}
	top["messages"] = joinArray(msgs)
	tools, _ := splitArray(top["tools"])
	for _, def := range x.g.hosts.Tools() {
		if !x.ours[def.Name] {
			continue
		}
		if x.p.api == anthropicAPI {
			tools = append(tools, marshal(map[string]any{"name": def.Name, "description": def.Description, "input_schema": def.Schema}))
		} else {
			tools = append(tools, marshal(map[string]any{"type": "function", "function": map[string]any{
				"name": def.Name, "description": def.Description, "parameters": def.Schema}}))
		}
	}
	if len(tools) > 0 {
		top["tools"] = joinArray(tools)
	}
	if final {
		if x.p.api == anthropicAPI {
			top["tool_choice"] = json.RawMessage(`{"type":"none"}`)
		} else {
			top["tool_choice"] = rawString("none")
		}
	}
	if x.stream && x.p.api == openaiAPI {
		// Usage of every round is needed to report the sum.
		opts := object(top["stream_options"])
		opts["include_usage"] = json.RawMessage("true")
		top["stream_options"] = marshal(opts)
	}
	return encodeTop(top, x.q.keys)
}

// appendSystem adds noa's prompt after an Anthropic system prompt (a string
// or text blocks), leaving what the client wrote, and its cache markers, as
// they were.
func appendSystem(sys json.RawMessage, add string) json.RawMessage {
	var s string
	switch {
	case len(sys) == 0 || string(sys) == "null":
		return rawString(add)
	case json.Unmarshal(sys, &s) == nil:
		return rawString(s + "\n\n" + add)
	}
	blocks, ok := splitArray(sys)
	if !ok {
		return sys
	}
	return joinArray(append(blocks, textBlock(add)))
}

// openaiSystem adds noa's prompt to the last leading system or developer
// message, or puts a system message first when there is none.
func openaiSystem(msgs []json.RawMessage, head int, add string) []json.RawMessage {
	out := append([]json.RawMessage(nil), msgs...)
	if head == 0 {
		return append([]json.RawMessage{marshal(map[string]any{"role": "system", "content": add})}, out...)
	}
	obj := object(out[head-1])
	var s string
	var parts []json.RawMessage
	switch {
	case json.Unmarshal(obj["content"], &s) == nil:
		obj["content"] = rawString(s + "\n\n" + add)
	case json.Unmarshal(obj["content"], &parts) == nil:
		obj["content"] = marshal(append(parts, textBlock(add)))
	}
	out[head-1] = marshal(obj)
	return out
}

// fallback forwards the client's request as it came (unprojected).
func (x *exchange) fallback(err error) {
	x.g.unprojected(x.w, x.r, x.p, x.path, x.raw, x.conv, err)
}

// HeaderWarning is set on the answer to a request the gateway forwarded
// unprojected because its conversation could not be recorded.
const HeaderWarning = "X-Mcproxy-Warning"

// unprojected answers a request whose projection failed (err) by
// forwarding it as it came. When the conversation could not be recorded
// (issue 26: a full disk must not leave a silent gap) the answer carries
// HeaderWarning, and /status shows the session's recording failing; with
// noa.on_record_error "refuse" the request is refused instead, with a
// provider-style 503 the client retries.
func (g *Gateway) unprojected(w http.ResponseWriter, r *http.Request, p *provider, path string, body []byte, conv string, err error) {
	if errors.Is(err, session.ErrNotRecorded) {
		if rf, ok := g.hosts.(interface{ RefuseUnrecorded() bool }); ok && rf.RefuseUnrecorded() {
			g.log.Error(`the conversation cannot be recorded; refusing the request (noa.on_record_error is "refuse")`, zap.String("api", string(p.api)), zap.String("session_id", conv), zap.Error(err))
			writeError(w, p.api, http.StatusServiceUnavailable, "api_error", fmt.Sprintf(
				`mcproxy gateway: the conversation cannot be recorded (%s), and config noa.on_record_error is "refuse", so the request was not sent; `+
					`retry once mcproxy's data_dir has room, or set noa.on_record_error to "report" to forward such requests unprojected`, session.Reason(err)))
			return
		}
		w.Header().Set(HeaderWarning, fmt.Sprintf(`conversation not recorded (%s); forwarded unprojected (noa.on_record_error "report")`, session.Reason(err)))
	}
	g.log.Error("projection failed; forwarding unprojected", zap.String("api", string(p.api)), zap.String("session_id", conv), zap.Error(err))
	g.forward(w, r, p, path, body)
}

// keep remembers a hidden round's assistant message for the continuation,
// under its first hidden call's id, the others marked as sent with it, when
// the message must come back as the model wrote it: when it carries
// thinking (an Anthropic model with thinking on must get its thinking back,
// signed, with its tool call), or when the client was given its text
// (delivered), so the model carries on from it instead of writing it again.
// Otherwise the continuation renders the calls from the host's view (a
// Compress call's summaries stubbed), byte for byte as the conversation's
// later requests will, so the prompt cache keeps the continuation's prefix;
// text the client was not given is dropped there too, or the model would
// take it for said.
func (x *exchange) keep(calls []hiddenCall, message json.RawMessage, delivered bool) {
	if len(calls) == 0 || !delivered && !hasThinking(message) {
		return
	}
	// recorded maps the model's id of each call to the id it was recorded
	// under; a call not recorded at all is left out, or the continuation
	// would hold a call with no result.
	recorded := map[string]string{}
	for _, c := range calls {
		recorded[cmp.Or(c.was, c.id)] = c.id
	}
	m := object(message)
	if _, ok := m["tool_calls"]; ok {
		// An OpenAI answer's message may hold fields (refusal, annotations)
		// that a request's assistant message may not.
		m = map[string]json.RawMessage{"role": m["role"], "content": m["content"], "tool_calls": m["tool_calls"]}
	}
	for _, key := range []string{"content", "tool_calls"} {
		items, ok := splitArray(m[key])
		if !ok {
			continue
		}
		out := items[:0:0]
		for _, it := range items {
			obj := object(it)
			var typ, id string
			_ = json.Unmarshal(obj["type"], &typ)
			_ = json.Unmarshal(obj["id"], &id)
			switch {
			case typ == "text" && !delivered:
				continue
			case typ == "tool_use" || key == "tool_calls":
				if recorded[id] == "" {
					continue
				}
				if recorded[id] != id {
					obj["id"] = rawString(recorded[id])
					it = marshal(obj)
				}
			}
			out = append(out, it)
		}
		m[key] = joinArray(out)
	}
	kept := marshal(m)
	for i, c := range calls {
		if i == 0 {
			x.calls[c.id] = kept
		} else {
			x.calls[c.id] = nil
		}
	}
}

// hasThinking reports whether an assistant message holds thinking or
// redacted thinking blocks.
func hasThinking(message json.RawMessage) bool {
	var m struct {
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	}
	_ = json.Unmarshal(message, &m)
	for _, b := range m.Content {
		if b.Type == "thinking" || b.Type == "redacted_thinking" {
			return true
		}
	}
	return false
}

// hiddenCall is a tool call of the model's that the gateway runs.
type hiddenCall struct {
	id, name, args string
	// was is the id the model gave a call run under another (id), because
	// the model reused one the conversation already holds.
	was string
}

// run executes the hidden calls in order; the host records each call and
// its result. A call that fails (the host returns an error, or the model
// reused a tool call id) is recorded with a result telling the model what
// failed and how to call again, so the next round shows it and the model
// can retry (issue 27: a failed call used to answer the client with
// nothing). It returns the calls as recorded, and an error only when the
// client is gone. When even the failure cannot be recorded, the request's
// next round is its final one: the model answers the client.
func (x *exchange) run(calls []hiddenCall) ([]hiddenCall, error) {
	ctx := x.r.Context()
	out := make([]hiddenCall, 0, len(calls))
	for _, c := range calls {
		m := noa.CoreMessage{ID: "gw_" + c.id, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: c.name, ToolCallID: c.id, Text: c.args}
		var err error
		switch {
		case x.used(c.id):
			err = fmt.Errorf("tool call id %q was already used in this conversation", c.id)
		case c.name == noa.CompressToolName:
			_, err = x.h.Compress(ctx, m)
		default:
			_, err = x.h.ReadArchive(ctx, m)
		}
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			x.g.log.Warn("a hidden call failed; the model gets the error, to retry", zap.String("tool", c.name), zap.String("session_id", x.conv), zap.Error(err))
			if c, err = x.failed(ctx, c, err); err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				x.g.log.Error("recording a failed hidden call; the model answers now", zap.String("tool", c.name), zap.String("session_id", x.conv), zap.Error(err))
				x.lastRound = true
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// failed records call c, which failed with cause, and a result for the
// model saying so. Its ids are made new when the conversation holds them
// (a reused id), so the provider never sees one tool call id twice.
func (x *exchange) failed(ctx context.Context, c hiddenCall, cause error) (hiddenCall, error) {
	for n := 2; x.used(c.id); n++ {
		if c.was == "" {
			c.was = c.id
		}
		c.id = fmt.Sprintf("%s_%d", c.was, n)
	}
	call := noa.CoreMessage{ID: "gw_" + c.id, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: c.name, ToolCallID: c.id, Text: c.args}
	res := noa.CoreMessage{ID: failedID(call), Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: c.name, ToolCallID: c.id,
		Text: failedCallText(c.name, cause)}
	if err := x.h.Record(ctx, call, res); err != nil {
		return c, fmt.Errorf("recording the failed %s call of session %s: %w", c.name, x.conv, err)
	}
	return c, nil
}

// used reports whether the conversation holds a hidden call of tool call
// id, or an answer to one.
func (x *exchange) used(id string) bool {
	call := noa.CoreMessage{ID: "gw_" + id}
	return x.h.Has(call.ID) || x.h.Has(resultID(call)) || x.h.Has(failedID(call))
}

// failedID is the id of the gateway's answer to its own tool call that
// failed: the dialects render it as an error (Anthropic's is_error), from
// the id alone, since a result's text may start with anything.
func failedID(call noa.CoreMessage) string { return call.ID + failedSuffix }

const failedSuffix = "/failed"

// failedCallText is what the model reads when its call of the gateway's
// tool name failed with cause: that nothing changed, and how to call again.
func failedCallText(name string, cause error) string {
	how := `arguments shaped like {"content": [{"start": "m00012", "end": "m00040", "summary": "...", "topic": "..."}]}, ` +
		"where start and end are refs (mNNNNN) or block ids (bN) from the latest range table"
	if name != noa.CompressToolName {
		how = `arguments such as {"block": "b3"} or {"ref": "m00042"}`
	}
	return fmt.Sprintf("the %s call failed and changed nothing (%v). Call %s again, as a new tool call, with %s.", name, cause, name, how)
}

// usageSum adds up the numeric usage fields of every round.
type usageSum map[string]int64

func (u usageSum) add(raw json.RawMessage) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for k, v := range m {
		var n int64
		if json.Unmarshal(v, &n) == nil {
			u[k] += n
		}
	}
}

// apply returns the final round's usage object with every numeric field
// replaced by its sum over the rounds.
func (u usageSum) apply(raw json.RawMessage) json.RawMessage {
	m := object(raw)
	for k, v := range m {
		var n int64
		if json.Unmarshal(v, &n) == nil {
			m[k] = marshal(u[k])
		}
	}
	return marshal(m)
}

// runJSON serves a non-streaming request, running hidden rounds. What a
// hidden round wrote beside its calls reaches the client as runStream would
// have streamed it: delivered before the final answer when the round wrote
// text and was not asked to compress, dropped otherwise.
func (x *exchange) runJSON() {
	for round := 0; ; round++ {
		t, err := x.turn(round)
		if err != nil {
			x.fallback(err)
			return
		}
		final := x.final(round)
		x.sent(t, round)
		resp, err := x.g.send(x.r.Context(), x.r, x.p, x.path, x.build(t, final))
		if err != nil {
			x.g.upstreamFailed(x.w, x.r, x.p, err)
			return
		}
		if resp.StatusCode != http.StatusOK {
			defer resp.Body.Close()
			_ = copyResponse(x.w, resp)
			return
		}
		limit := x.g.cfg.Limits.MaxAnswerBytes
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		resp.Body.Close()
		if err != nil {
			x.g.upstreamFailed(x.w, x.r, x.p, err)
			return
		}
		if int64(len(b)) > limit {
			x.g.log.Warn("an answer over gateway.limits.max_answer_bytes", zap.String("api", string(x.p.api)), zap.String("session_id", x.conv))
			writeError(x.w, x.p.api, http.StatusBadGateway, "api_error", answerTooLarge(limit).msg)
			return
		}
		a, err := x.answer(b)
		if err != nil {
			x.g.log.Warn("an answer the gateway could not read; passed on as it came", zap.String("api", string(x.p.api)), zap.Error(err))
			writeBody(x.w, resp, b)
			return
		}
		x.usage.add(a.usage)
		if len(a.hidden) > 0 {
			calls, err := x.run(a.hidden)
			if err != nil {
				return // the client is gone
			}
			if !a.client && !final {
				delivered := delivers(t, a.wrote)
				if delivered {
					x.shown = append(x.shown, a.shown...)
					x.shownText += a.text
				}
				x.keep(calls, a.message, delivered)
				continue
			}
		}
		writeBody(x.w, resp, a.final(x.usage, x.shown, x.shownText))
		return
	}
}

// final reports whether round (0 the first) is the request's last: past
// gateway.max_hidden_rounds, or after a failure run could not record. It
// goes with tool_choice none, so the model answers the client.
func (x *exchange) final(round int) bool {
	return round > 0 && (round >= x.g.cfg.MaxHiddenRounds || x.lastRound)
}

// writeBody answers with resp's status and headers and body b.
func writeBody(w http.ResponseWriter, resp *http.Response, b []byte) {
	h := copyHeader(w, resp)
	h.Del("Content-Encoding")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
}

// answer is a JSON answer taken apart.
type answer struct {
	top  map[string]json.RawMessage
	keys []string
	// hidden are the calls of the gateway's tools; client reports whether
	// the answer also calls the client's tools.
	hidden []hiddenCall
	client bool
	usage  json.RawMessage
	// message is the assistant message as the model wrote it, for the
	// continuation; shown (Anthropic blocks) or text (OpenAI) what of it
	// the client may see; strip rebuilds the answer without the hidden
	// calls, after what earlier rounds delivered.
	message json.RawMessage
	shown   []json.RawMessage
	text    string
	wrote   bool // the model wrote text (not only thinking or calls)
	strip   func(top map[string]json.RawMessage, shown []json.RawMessage, text string)
}

// final is the answer for the client: what earlier hidden rounds delivered
// (shown blocks, or text) first, the hidden calls removed and usage summed
// over the rounds.
func (a *answer) final(u usageSum, shown []json.RawMessage, text string) []byte {
	if len(a.hidden) > 0 || len(shown) > 0 || text != "" {
		a.strip(a.top, shown, text)
	}
	if len(a.usage) > 0 {
		a.top["usage"] = u.apply(a.usage)
	}
	return encodeTop(a.top, a.keys)
}

func (x *exchange) answer(b []byte) (*answer, error) {
	top, keys, err := decodeTop(b)
	if err != nil {
		return nil, err
	}
	a := &answer{top: top, keys: keys, usage: top["usage"]}
	if x.p.api == anthropicAPI {
		var content []json.RawMessage
		if err := json.Unmarshal(top["content"], &content); err != nil {
			return nil, fmt.Errorf("the answer has no content array")
		}
		keep := content[:0:0]
		for _, c := range content {
			var blk struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal(c, &blk)
			switch {
			case blk.Type == "tool_use" && x.ours[blk.Name]:
				a.hidden = append(a.hidden, hiddenCall{id: blk.ID, name: blk.Name, args: compactJSON(blk.Input)})
				continue
			case blk.Type == "tool_use":
				a.client = true
			case blk.Type == "text":
				a.wrote = true
			}
			keep = append(keep, c)
		}
		a.message = marshal(map[string]any{"role": "assistant", "content": content})
		a.shown = keep
		a.strip = func(top map[string]json.RawMessage, shown []json.RawMessage, _ string) {
			top["content"] = marshal(append(append([]json.RawMessage{}, shown...), keep...))
		}
		return a, nil
	}
	var choices []map[string]json.RawMessage
	if err := json.Unmarshal(top["choices"], &choices); err != nil || len(choices) == 0 {
		return nil, fmt.Errorf("the answer has no choices")
	}
	msg := object(choices[0]["message"])
	var calls []json.RawMessage
	_ = json.Unmarshal(msg["tool_calls"], &calls)
	keep := calls[:0:0]
	for _, c := range calls {
		tc := decodeToolCall(c)
		if x.ours[tc.Function.Name] {
			a.hidden = append(a.hidden, hiddenCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
			continue
		}
		a.client = true
		keep = append(keep, c)
	}
	a.message = choices[0]["message"]
	_ = json.Unmarshal(msg["content"], &a.text)
	a.wrote = a.text != ""
	a.strip = func(top map[string]json.RawMessage, _ []json.RawMessage, shown string) {
		if shown != "" {
			msg["content"] = rawString(shown + a.text)
		}
		switch {
		case len(keep) > 0:
			msg["tool_calls"] = marshal(keep)
		case len(a.hidden) > 0:
			delete(msg, "tool_calls")
			choices[0]["finish_reason"] = rawString("stop")
		}
		choices[0]["message"] = marshal(msg)
		top["choices"] = marshal(choices)
	}
	return a, nil
}
