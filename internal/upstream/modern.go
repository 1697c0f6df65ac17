package upstream

// This file speaks to each upstream in a protocol revision it supports.
// mcp-go's client probes with server/discover (2026-07-28) and falls back to
// the initialize handshake (2025-11-25) when the probe fails; a server that
// answers but speaks 2025-11-25 too is then greeted with initialize after
// all (settleLegacy says why), so 2026-07-28 is spoken only to servers that
// speak nothing else or are pinned to it ("protocol"). What differs between
// the two revisions after that is handled here:
//
//   - requests mcproxy sends itself (tools/list verbatim, prompts/get,
//     resources/read, completion) carry the per-request _meta and, over
//     HTTP, the Mcp-Method/Mcp-Name headers that 2026-07-28 requires;
//   - a result with resultType "input_required" (multi round-trip, SEP-2322)
//     is answered through the peer of the call, as a server-to-client
//     request would be, and the request is sent again with the answers
//     (mcp-go's CallTool does this itself with the handlers relayOptions
//     registers), unless the request is a 2026-07-28 client's, forwarded
//     as it came, whose client answers (forward.go);
//   - notifications (list_changed, resources/updated) arrive only on a
//     subscriptions/listen stream, which replaces resources/subscribe;
//   - ping is gone: a liveness probe is a server/discover.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// clientInfo is who mcproxy says it is to its upstreams.
var clientInfo = mcp.Implementation{Name: "mcproxy", Version: "dev"}

// maxDiscoverProbe caps the server/discover probe. A server before
// 2026-07-28 answers it at once with MethodNotFound (the npm reference
// servers do); only one that ignores unknown methods waits the probe out,
// and the link remembers it (legacy) so that reconnects skip the probe.
const maxDiscoverProbe = 2 * time.Second

// discoverProbe bounds the probe by a quarter of the init timeout, so the
// fallback to initialize always has most of it left.
func discoverProbe(init time.Duration) time.Duration {
	return max(min(maxDiscoverProbe, init/4), time.Millisecond)
}

// maxInputRounds bounds the multi round-trip loop of one request.
const maxInputRounds = 10

// listenRetry is how long the subscriptions/listen loop waits before
// reopening a stream the upstream ended.
const listenRetry = time.Second

// preferredVersion is the revision l's next connection asks for: the one
// its config pins, else the newest, unless the server showed it does not
// speak it or its transport (legacy SSE) cannot carry it.
func (l *link) preferredVersion() string {
	if l.cfg.Protocol != "" {
		return l.cfg.Protocol
	}
	if l.kind == config.TransportSSE || l.legacy.Load() {
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return protocolVersion
}

// negotiated records the revision the upstream agreed to. A server pinned
// to 2026-07-28 that does not speak it is an error saying so.
func (l *link) negotiated(s *session, version string) error {
	modern := mcp.IsModernProtocol(version)
	s.modern.Store(modern)
	if !modern {
		l.legacy.Store(true)
	}
	if pin := l.cfg.Protocol; mcp.IsModernProtocol(pin) && version != pin {
		return fmt.Errorf("mcpServers.%s.protocol pins %s, but the server does not answer server/discover in it (it speaks %s); remove the key to let mcproxy negotiate", l.name, pin, version)
	}
	return nil
}

// settleLegacy decides, for a server that answered mcp-go's
// server/discover probe, whether to speak 2025-11-25 to it after all, and
// if so remembers that on l (l.legacy). It does when:
//
//   - the server's own server/discover does not list the revision: mcp-go
//     accepts any result to its probe, and some servers answer every
//     method they do not know with an empty result;
//   - the server lists 2025-11-25 (or an earlier initialize revision) too,
//     and the config does not pin 2026-07-28. Such a server serves its
//     2025-11-25 clients everything, including the server-to-client
//     requests (sampling, elicitation, roots) of tools written for that
//     revision, which the SDKs refuse to send on 2026-07-28 (mcp-go
//     v1.2.1, Go SDK v1.8.0); tools written for 2026-07-28 (input_required)
//     work on 2025-11-25 too, bridged by the server's SDK. So 2025-11-25
//     is the revision in which everything it offers reaches every client.
//
// Only a server that speaks nothing but 2026-07-28 (or is pinned to it)
// is spoken to in it.
func (l *link) settleLegacy(ctx context.Context, s *session) (bool, error) {
	version := s.client.ProtocolVersion()
	res, err := s.client.Discover(ctx, mcp.DiscoverRequest{})
	switch {
	case err != nil || !slices.Contains(res.SupportedVersions, version):
		if l.cfg.Protocol != "" {
			return false, fmt.Errorf("mcpServers.%s.protocol pins %s, but the server's server/discover does not list it (it lists %v); remove the key to let mcproxy negotiate", l.name, l.cfg.Protocol, supported(res))
		}
		l.log.Info("the upstream answered server/discover without listing "+version+"; speaking 2025-11-25 to it",
			zap.Strings("supported_versions", supported(res)), zap.Error(err))
	case l.cfg.Protocol != "" || l.stateless.Load():
		return false, nil
	case !slices.ContainsFunc(res.SupportedVersions, func(v string) bool { return !mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) }):
		return false, nil
	default:
		l.log.Debug("the upstream speaks 2025-11-25 too; speaking that, in which its tools' server-to-client requests work (set mcpServers."+l.name+".protocol to \"2026-07-28\" to speak the newer one)",
			zap.Strings("supported_versions", res.SupportedVersions))
	}
	l.legacy.Store(true)
	return true, nil
}

// statelessLegacy reports, for a session just greeted with initialize,
// whether l's server must be spoken to in 2026-07-28 instead, and if so
// remembers that on l (l.stateless). It must when the server answered
// server/discover (it speaks 2026-07-28 too) and serves 2025-11-25 over
// streamable HTTP without a session (no Mcp-Session-Id): such a server
// (the Go SDK's and mcp-go's stateless modes) has no channel for the
// server-to-client requests its tools need on 2025-11-25, while on
// 2026-07-28 they reach the client as input requests (SEP-2322). So
// 2026-07-28 is the revision in which everything it offers works.
func (l *link) statelessLegacy(s *session) bool {
	if !l.negotiates() || l.stateless.Load() {
		return false
	}
	if p, _ := l.probe.Load().(string); p != probeAnswered {
		return false
	}
	h, ok := s.tr.(transport.HTTPConnection)
	if !ok || l.kind != config.TransportStreamableHTTP || h.GetSessionId() != "" {
		return false
	}
	l.stateless.Store(true)
	l.legacy.Store(false)
	l.log.Info("the upstream serves 2025-11-25 without a session, where its server-to-client requests cannot work; speaking 2026-07-28 to it")
	return true
}

func supported(res *mcp.DiscoverResult) []string {
	if res == nil {
		return nil
	}
	return res.SupportedVersions
}

// statelessState is what a 2026-07-28 connection keeps on mcproxy's side:
// the log level every request declares, and the subscriptions/listen
// stream.
type statelessState struct {
	mu     sync.Mutex
	level  mcp.LoggingLevel
	subs   []string           // resource URIs to listen for, sorted
	cancel context.CancelFunc // ends the current listen stream (nil: none)
}

// capabilities are what mcproxy declares per request: what relayOptions
// configures, plus what its handlers imply.
func (s *session) capabilities() mcp.ClientCapabilities {
	c := s.client.GetClientCapabilities()
	if c.Sampling == nil {
		c.Sampling = &mcp.SamplingCapability{}
	}
	if c.Roots == nil {
		c.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	}
	return c
}

// outgoing adds what a 2026-07-28 request must carry to params: the
// protocol version, client info, capabilities and log level in _meta, and
// the standard headers for HTTP. On 2025-11-25 it returns params as is.
// A forwarded request (fwd non-nil) keeps its client's capabilities, log
// level and client info (forward.go): only the protocol version is
// mcproxy's to set.
func (s *session) outgoing(method string, params any, fwd *Forward) (any, http.Header, error) {
	if !s.modern.Load() {
		return params, nil, nil
	}
	fields := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the params of %s: %w", method, err)
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, nil, fmt.Errorf("the params of %s are not an object: %w", method, err)
		}
	}
	meta := map[string]any{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, nil, fmt.Errorf("the _meta of %s is not an object: %w", method, err)
		}
	}
	version := s.client.ProtocolVersion()
	meta[mcp.MetaKeyProtocolVersion] = version
	if fwd != nil {
		fwd.declare(meta)
	} else {
		meta[mcp.MetaKeyClientInfo] = clientInfo
		meta[mcp.MetaKeyClientCapabilities] = s.capabilities()
		s.stateless.mu.Lock()
		if s.stateless.level != "" {
			meta[mcp.MetaKeyLogLevel] = s.stateless.level
		}
		s.stateless.mu.Unlock()
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the _meta of %s: %w", method, err)
	}
	fields["_meta"] = b
	encoded, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the params of %s: %w", method, err)
	}
	h := http.Header{}
	for k, v := range mcp.StandardHeaders(version, mcp.MCPMethod(method), encoded) {
		h.Set(k, v)
	}
	return json.RawMessage(encoded), h, nil
}

// send sends one request mcproxy builds itself, in the connection's
// revision. A transport failure comes back as a transport error.
func (s *session) send(ctx context.Context, id, method string, params any) (*transport.JSONRPCResponse, error) {
	return s.sendAs(ctx, id, method, params, nil, nil)
}

// sendAs is send for a request forwarded for a client (fwd, nil: one of
// mcproxy's own), with extra headers (Mcp-Param-*) added to the standard
// ones.
func (s *session) sendAs(ctx context.Context, id, method string, params any, fwd *Forward, extra http.Header) (*transport.JSONRPCResponse, error) {
	params, header, err := s.outgoing(method, params, fwd)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		if header == nil {
			header = http.Header{}
		}
		header[k] = v
	}
	resp, err := s.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Method:  method,
		Params:  params,
		Header:  header,
	})
	if err != nil {
		return nil, transport.NewError(err)
	}
	return resp, nil
}

// rpc sends one request to the upstream and decodes its result into out
// (nil = ignore). A JSON-RPC error answer is an *RPCError (Server unset).
// On 2026-07-28 an input_required result is answered (answerInputs) and
// the request sent again, and resources/subscribe and unsubscribe change
// the subscriptions/listen stream instead.
func (s *session) rpc(ctx context.Context, method string, params any, out any) error {
	if s.modern.Load() && (method == string(mcp.MethodResourcesSubscribe) || method == string(mcp.MethodResourcesUnsubscribe)) {
		return s.subscribe(method, params)
	}
	if fwd := forwardFrom(ctx); fwd != nil && s.modern.Load() {
		return s.forward(ctx, method, params, fwd, out)
	}
	var round mcp.MultiRoundTripParams
	for rounds := 0; ; rounds++ {
		p := params
		if rounds > 0 {
			var err error
			if p, err = withRound(params, round); err != nil {
				return err
			}
		}
		resp, err := s.send(ctx, fmt.Sprintf("mcproxy-%d", s.reqID.Add(1)), method, p)
		if err != nil {
			return err
		}
		if resp.Error != nil {
			return &RPCError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
		}
		if s.modern.Load() {
			var asks mcp.InputRequiredResult
			if err := json.Unmarshal(resp.Result, &asks); err == nil && asks.NeedsInput() {
				if rounds+1 >= maxInputRounds {
					return fmt.Errorf("%s: the upstream asked for input %d times; giving up", method, maxInputRounds)
				}
				answers, err := s.answerInputs(ctx, asks.InputRequests)
				if err != nil {
					return fmt.Errorf("%s: %w", method, err)
				}
				round = mcp.MultiRoundTripParams{InputResponses: answers, RequestState: asks.RequestState}
				continue
			}
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("decoding the answer to %s: %w", method, err)
		}
		return nil
	}
}

// withRound returns params with a multi round-trip retry's answers and
// state added (params itself is left alone).
func withRound(params any, round mcp.MultiRoundTripParams) (map[string]any, error) {
	out := map[string]any{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding params: %w", err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, fmt.Errorf("params are not an object: %w", err)
		}
	}
	if len(round.InputResponses) > 0 {
		out["inputResponses"] = round.InputResponses
	}
	if round.RequestState != "" {
		out["requestState"] = round.RequestState
	}
	return out, nil
}

// answerInputs answers an upstream's input requests one by one, through
// the same handlers (and so the same front client) as its server-to-client
// requests on 2025-11-25.
func (s *session) answerInputs(ctx context.Context, asks mcp.InputRequests) (mcp.InputResponses, error) {
	h := s.handlers
	if h.s == nil {
		return nil, fmt.Errorf("no handlers for input requests")
	}
	out := make(mcp.InputResponses, len(asks))
	for _, key := range slices.Sorted(maps.Keys(asks)) {
		ask := asks[key]
		switch ask.Method {
		case mcp.MethodSamplingCreateMessage:
			if ask.Sampling == nil {
				return nil, fmt.Errorf("input request %q (%s) has no params", key, ask.Method)
			}
			res, err := h.CreateMessage(ctx, mcp.CreateMessageRequest{Request: mcp.Request{Method: string(ask.Method)}, CreateMessageParams: *ask.Sampling})
			if err != nil {
				return nil, fmt.Errorf("answering input request %q: %w", key, err)
			}
			out[key] = mcp.NewSamplingInputResponse(*res)
		case mcp.MethodElicitationCreate:
			if ask.Elicitation == nil {
				return nil, fmt.Errorf("input request %q (%s) has no params", key, ask.Method)
			}
			res, err := h.Elicit(ctx, mcp.ElicitationRequest{Request: mcp.Request{Method: string(ask.Method)}, Params: *ask.Elicitation})
			if err != nil {
				return nil, fmt.Errorf("answering input request %q: %w", key, err)
			}
			out[key] = mcp.NewElicitationInputResponse(*res)
		case mcp.MethodListRoots:
			res, err := h.ListRoots(ctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(ask.Method)}})
			if err != nil {
				return nil, fmt.Errorf("answering input request %q: %w", key, err)
			}
			if res.Roots == nil {
				res.Roots = []mcp.Root{}
			}
			out[key] = mcp.NewRootsInputResponse(*res)
		default:
			return nil, fmt.Errorf("input request %q asks for %q, which mcproxy cannot relay", key, ask.Method)
		}
	}
	return out, nil
}

// ping checks that the upstream answers: ping on 2025-11-25, a
// server/discover on 2026-07-28 (which has no ping).
func (s *session) ping(ctx context.Context) error {
	if !s.modern.Load() {
		return s.client.Ping(ctx)
	}
	_, err := s.client.Discover(ctx, mcp.DiscoverRequest{})
	return err
}

// subscribe changes the set of resources the subscriptions/listen stream
// asks updates for, and reopens the stream with it.
func (s *session) subscribe(method string, params any) error {
	p, _ := params.(map[string]any)
	uri, _ := p["uri"].(string)
	if uri == "" {
		return fmt.Errorf("%s without a uri", method)
	}
	if caps := s.client.GetServerCapabilities().Resources; method == string(mcp.MethodResourcesSubscribe) && (caps == nil || !caps.Subscribe) {
		return &RPCError{Method: method, Code: mcp.METHOD_NOT_FOUND, Message: "the server does not offer resource subscriptions (its capabilities have no resources.subscribe)"}
	}
	st := &s.stateless
	st.mu.Lock()
	defer st.mu.Unlock()
	i, found := slices.BinarySearch(st.subs, uri)
	switch {
	case method == string(mcp.MethodResourcesSubscribe) && !found:
		st.subs = slices.Insert(st.subs, i, uri)
	case method == string(mcp.MethodResourcesUnsubscribe) && found:
		st.subs = slices.Delete(st.subs, i, i+1)
	default:
		return nil
	}
	if st.cancel != nil {
		st.cancel() // the listen loop reopens with the new filter
	}
	return nil
}

// setLevel applies a logging level: logging/setLevel on 2025-11-25; on
// 2026-07-28, which has no such request, every later request declares it.
func (s *session) setLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if s.client.GetServerCapabilities().Logging == nil {
		return nil
	}
	if s.modern.Load() {
		s.stateless.mu.Lock()
		s.stateless.level = level
		s.stateless.mu.Unlock()
	}
	var req mcp.SetLevelRequest
	req.Params.Level = level
	return s.client.SetLevel(ctx, req) // on 2026-07-28 mcp-go records it for its own requests
}

// listen keeps a subscriptions/listen stream open on a 2026-07-28
// connection, for list changes and the subscribed resources' updates
// (2025-11-25 sends those without asking). The goroutine is the session's;
// it ends with ctx.
func (l *link) listen(ctx context.Context, s *session) {
	if !s.modern.Load() {
		return
	}
	s.spawn("subscriptions/listen loop", func() {
		for ctx.Err() == nil {
			lctx, cancel := context.WithCancel(ctx)
			st := &s.stateless
			st.mu.Lock()
			st.cancel = cancel
			filter := s.listenFilter()
			st.mu.Unlock()
			var err error
			if filter.IsEmpty() {
				// Nothing the server offers to listen for (a server that
				// gets an empty filter ends the stream at once): wait for a
				// subscription to change that.
				<-lctx.Done()
			} else {
				err = s.client.Listen(lctx, filter)
			}
			reopened := lctx.Err() != nil && ctx.Err() == nil
			cancel()
			if reopened {
				continue // the filter changed
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil && !isConnErr(err) {
				// The upstream refused the stream (a JSON-RPC error):
				// asking again would get the same answer.
				l.log.Warn("the upstream refused subscriptions/listen; its list changes and resource updates will not be relayed", zap.Error(err))
				return
			}
			l.log.Debug("the subscriptions/listen stream ended; reopening", zap.Error(err))
			select {
			case <-time.After(listenRetry):
			case <-ctx.Done():
			}
		}
	})
}

// listenFilter is what the listen stream asks for: the list changes the
// server announces, and the subscribed resources if it takes
// subscriptions. s.stateless.mu must be held.
func (s *session) listenFilter() mcp.SubscriptionFilter {
	caps := s.client.GetServerCapabilities()
	var f mcp.SubscriptionFilter
	f.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	if caps.Resources != nil {
		f.ResourcesListChanged = caps.Resources.ListChanged
		if caps.Resources.Subscribe {
			f.ResourceSubscriptions = slices.Clone(s.stateless.subs)
		}
	}
	return f
}

// maxErrorBody bounds the body read by errorStatusTap.
const maxErrorBody = 64 << 10

// errorStatusTap hands mcp-go a 2026-07-28 JSON-RPC error answered with
// HTTP 404 as a 200. That revision answers MethodNotFound with 404, but
// mcp-go's transport (v1.2.1) takes every 404 for a lost session and drops
// the body, so "this server has no prompts" would read as a broken
// connection. Only a POST on 2026-07-28 whose 404 body is a JSON-RPC error
// is changed; any other 404 (a wrong URL behind a proxy) goes on as is.
type errorStatusTap struct {
	base http.RoundTripper
}

func (t *errorStatusTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusNotFound || r.Method != http.MethodPost ||
		!mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.JSONRPC == mcp.JSONRPC_VERSION && len(msg.Error) > 0 {
		resp.StatusCode = http.StatusOK
		resp.Status = "200 OK"
		resp.Header.Set("Content-Type", "application/json")
	}
	return resp, nil
}

// discoverRetryTap sends a server/discover again, once, when the server
// refused it with UnsupportedProtocolVersion (-32022) while listing the
// very revision it was sent in. mcp-go (v1.2.1) retries only at a
// different revision, and otherwise falls back to initialize, which a
// server that just proved it speaks 2026-07-28 may refuse, and which
// carries neither the MCP-Protocol-Version header nor the _meta that
// revision asks of every request (SEP-2575; the conformance suite's
// request-metadata scenario refuses the first request this way).
type discoverRetryTap struct {
	base http.RoundTripper
}

func (t *discoverRetryTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	version := r.Header.Get(mcp.HeaderProtocolVersion)
	if err != nil || resp.StatusCode != http.StatusBadRequest || r.Method != http.MethodPost || r.GetBody == nil ||
		r.Header.Get(mcp.HeaderMethod) != string(mcp.MethodServerDiscover) || !mcp.IsModernProtocol(version) {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil || !listsRefused(body, version) {
		return resp, nil
	}
	again := r.Clone(r.Context())
	if again.Body, err = r.GetBody(); err != nil {
		return resp, nil
	}
	return t.base.RoundTrip(again)
}

// listsRefused reports whether body is a JSON-RPC UnsupportedProtocolVersion
// error whose supported versions include version.
func listsRefused(body []byte, version string) bool {
	var msg struct {
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil || msg.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return false
	}
	return slices.Contains(msg.Error.Data.Supported, version)
}
