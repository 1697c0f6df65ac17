package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/sdklog"
)

// protocolVersion is the revision a connection asks for first (with
// server/discover); modern.go says which one mcproxy then speaks.
const protocolVersion = mcp.LATEST_PROTOCOL_VERSION

// maxToolPages bounds the tools/list cursor loop against a server that
// keeps handing out new cursors.
const maxToolPages = 1000

// cancelNotifyTimeout bounds sending one notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

// session is one live connection to an upstream: an initialized mcp-go
// client, plus the child process (stdio) or HTTP client (SSE, streamable
// HTTP) under it. A session is never reused after it is lost; the link dials
// a new one.
type session struct {
	client *client.Client
	tr     transport.Interface // what the client talks through (for raw requests)
	proc   *process            // stdio only
	http   *http.Client        // HTTP transports only
	cancel context.CancelFunc  // ends the transport's long-lived context
	log    *zap.Logger         // the link's: the session's goroutines log here

	lost     chan struct{} // closed by link.markLost
	lostOnce sync.Once
	// readErr is why reading the upstream stopped, when mcproxy stopped it
	// (a *MessageTooLargeError); the call that loses its answer reports it
	// (for HTTP, the next call failing at the transport level takes it).
	readErr atomic.Pointer[error]
	// earlyLoss is a loss reported before the session went live (guarded
	// by the link's mu).
	earlyLoss error

	refresh chan struct{} // a tools/list_changed arrived (capacity 1)
	// catalogRefresh: a prompts or resources list_changed arrived
	// (capacity 1); catalog is what dial listed besides tools.
	catalogRefresh chan struct{}
	catalog        *Catalog
	calls          calls // calls in flight, for relaying what the upstream sends during them

	mu      sync.Mutex
	closing bool           // set once close has begun; no new goroutines after
	wg      sync.WaitGroup // goroutines this session owns
	reqID   atomic.Int64
	// postStatus is the HTTP status of the last POST (streamable HTTP),
	// which mcp-go's "likely a legacy SSE server" error leaves out.
	postStatus atomic.Int32
	// modern: the upstream is spoken to in 2026-07-28 (set once, at dial).
	modern    atomic.Bool
	stateless statelessState // what 2026-07-28 keeps per connection (modern.go)
	handlers  relayHandlers  // answer the upstream's requests (set by relayOptions)
}

// spawn runs f on a goroutine the session owns, named name, unless the
// session is already closing. A panic in f is logged with its stack
// (goroutine.Recover), not raised.
func (s *session) spawn(name string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	s.wg.Add(1)
	goroutine.Go(s.log, name, func() {
		defer s.wg.Done()
		f()
	})
}

func (s *session) signalRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// signalCatalogRefresh asks for prompts, resources and templates to be
// listed again (a re-list already asked for covers it).
func (s *session) signalCatalogRefresh() {
	select {
	case s.catalogRefresh <- struct{}{}:
	default:
	}
}

// dial connects to the upstream of l, initializes it and lists its tools,
// all within the init timeout. The returned session lives until
// closeSession, which the caller owes even when dial fails (a failed
// session is returned so the failure can be reported before a child that
// hung is stopped in stages); its transport runs under ctx.
func (l *link) dial(ctx context.Context) (*session, []mcp.Tool, error) {
	return l.dialOnce(ctx, true)
}

// dialOnce is dial; renegotiate allows one more dial at once when a
// server remembered as 2025-11-25 refuses initialize (revisions.go).
func (l *link) dialOnce(ctx context.Context, renegotiate bool) (*session, []mcp.Tool, error) {
	sctx, cancel := context.WithCancel(ctx)
	s := &session{
		log:     l.log,
		cancel:  cancel,
		lost:    make(chan struct{}),
		refresh: make(chan struct{}, 1),

		catalogRefresh: make(chan struct{}, 1),
	}
	lim := l.initLimit()
	ictx, icancel := context.WithTimeoutCause(sctx, lim.d, errInitTimeout)
	defer icancel()
	// Some transports block in Start on the long-lived context (SSE waits
	// for its endpoint event); if the init timeout passes first, end that
	// context too so nothing outlives the attempt.
	stopWatch := context.AfterFunc(ictx, func() {
		if errors.Is(context.Cause(ictx), errInitTimeout) {
			cancel()
		}
	})
	defer stopWatch()

	fail := func(step string, err error) (*session, []mcp.Tool, error) {
		if errors.Is(context.Cause(ictx), errInitTimeout) {
			err = fmt.Errorf("%s timed out after %s (limit set by %s)", step, lim.d, lim.setting)
		} else {
			err = fmt.Errorf("%s: %w", step, l.explainAuth(err))
		}
		if s.proc != nil && isConnErr(err) && s.proc.waitFor(time.Second) {
			// The child died during start-up; its exit status and stderr
			// say why.
			err = fmt.Errorf("%w (%v)%s", err, s.proc.exitError(), halfInstalledHint(l.cfg, s.proc.stderrTail()))
		}
		return s, nil, l.m.mask(err)
	}

	if err := l.openTransport(sctx, s); err != nil {
		return fail("connecting", err)
	}
	info, step, err := l.handshake(sctx, ictx, s)
	if err != nil {
		if step == stepInitialize && l.staleRevision(ictx, err, renegotiate) {
			stopWatch()
			l.closeSession(s)
			return l.dialOnce(ctx, false)
		}
		return fail(step, err)
	}
	if s.modern.Load() {
		again, err := l.settleLegacy(ictx, s)
		if err != nil {
			return s, nil, err
		}
		// The server speaks 2025-11-25 too (or did not really answer
		// server/discover): speak that (modern.go says why). A stdio
		// child is greeted again with initialize when it takes one after
		// server/discover (mcp-go's servers do, the Go SDK's do not);
		// otherwise, and over HTTP, mcproxy starts over.
		if again {
			ok := false
			if s.proc != nil {
				s.client = l.newClient(s)
				var rerr error
				if info, _, rerr = l.handshake(sctx, ictx, s); rerr == nil {
					ok = true
				} else {
					l.log.Debug("the upstream refused initialize after server/discover; restarting it", zap.Error(rerr))
				}
			}
			if !ok {
				stopWatch()
				l.closeSession(s)
				return l.dialOnce(ctx, false)
			}
		}
	} else if l.statelessLegacy(s) {
		stopWatch()
		l.closeSession(s)
		return l.dialOnce(ctx, false)
	}
	l.applyLogLevel(ictx, s)
	tools, err := s.listTools(ictx, l.log)
	if err != nil {
		return fail("listing tools", err)
	}
	cat, err := s.listCatalog(ictx, l.name, info)
	if err != nil {
		if isConnErr(err) || ictx.Err() != nil {
			return fail("listing prompts and resources", err)
		}
		l.log.Warn("the upstream's prompts or resources could not be listed; serving its tools only", zap.Error(err))
		cat = &Catalog{Server: l.name, Instructions: info.Instructions, Capabilities: info.Capabilities}
	}
	s.catalog = cat
	l.resubscribe(ictx, s)
	l.listen(sctx, s)
	if !stopWatch() {
		// The timeout fired just as we finished.
		return fail("initialize", ictx.Err())
	}
	l.log.Info("upstream ready",
		zap.String("transport", l.kind),
		zap.String("server_name", info.ServerInfo.Name),
		zap.String("server_version", info.ServerInfo.Version),
		zap.String("protocol", info.ProtocolVersion),
		zap.Int("tools", len(tools)), zap.Int("prompts", len(cat.Prompts)),
		zap.Int("resources", len(cat.Resources)), zap.Int("resource_templates", len(cat.Templates)))
	l.settled(info.ProtocolVersion)
	return s, tools, nil
}

var errInitTimeout = errors.New("init timeout")

// openTransport builds the transport for l's config and the client over it.
func (l *link) openTransport(ctx context.Context, s *session) error {
	slogger := sdklog.New(l.log, true)
	switch l.kind {
	case config.TransportStdio:
		p, err := startProcess(l.cfg, l.log)
		if err != nil {
			return err
		}
		s.proc = p
		l.log.Info("started upstream process", zap.String("command", l.cfg.Command), zap.Int("pid", p.pid),
			zap.Strings("env_keys", slices.Sorted(maps.Keys(l.cfg.Env))), zap.String("cwd", l.cfg.Cwd))
		// The filter bounds each stdout line, so an oversize one is never
		// read whole, and drops and logs what is not JSON-RPC.
		out := newStdoutFilter(p.stdout, l.log)
		out.server, out.limit, out.tooLarge = l.name, l.m.maxMessage, func(err error) {
			s.readErr.Store(&err)
			l.markLost(s, err)
		}
		stdio := transport.NewIO(out, p.stdin, nil)
		transport.WithCommandLogger(slogger)(stdio) // NewIO takes no options; this one applies as well
		s.tr = stdio
		s.spawn("upstream exit watch", func() {
			select {
			case <-p.exited:
				l.markLost(s, p.exitError())
			case <-ctx.Done():
			}
		})
	case config.TransportSSE:
		l.logHTTP()
		s.http = l.newHTTP(func(err error) { s.readErr.Store(&err) })
		sse, err := transport.NewSSE(l.cfg.URL,
			transport.WithHeaders(l.cfg.Headers),
			transport.WithHTTPClient(s.http),
			transport.WithSSELogger(slogger),
			transport.WithEndpointTimeout(l.init.d))
		if err != nil {
			return err
		}
		sse.SetConnectionLostHandler(func(err error) {
			l.markLost(s, fmt.Errorf("SSE stream ended: %w", err))
		})
		s.tr = &httpTap{HTTPConnection: sse, s: s}
	case config.TransportStreamableHTTP:
		l.logHTTP()
		s.http = l.newHTTP(func(err error) { s.readErr.Store(&err) })
		s.http.Transport = &statusTap{base: &errorStatusTap{base: &discoverRetryTap{base: s.http.Transport}}, status: &s.postStatus}
		h, err := transport.NewStreamableHTTP(l.cfg.URL,
			transport.WithHTTPHeaders(l.cfg.Headers),
			transport.WithHTTPBasicClient(s.http),
			transport.WithHTTPLogger(slogger),
			transport.WithContinuousListening())
		if err != nil {
			return err
		}
		s.tr = &httpTap{HTTPConnection: h, s: s}
	default:
		return fmt.Errorf("mcpServers.%s has neither a command nor a url", l.name)
	}
	s.client = l.newClient(s)
	return nil
}

// newClient builds the mcp-go client over s's transport, asking for l's
// preferred revision.
func (l *link) newClient(s *session) *client.Client {
	return client.NewClient(s.tr, append(s.relayOptions(l.name),
		client.WithProtocolVersion(l.preferredVersion()), client.WithDiscoverTimeout(discoverProbe(l.init.d)))...)
}

// stepInitialize names the handshake step in errors.
const stepInitialize = "initialize"

// handshake starts s's client and connects it: server/discover, or
// initialize. It returns the step that failed with the error.
func (l *link) handshake(sctx, ictx context.Context, s *session) (*mcp.InitializeResult, string, error) {
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			s.signalRefresh()
			return
		case string(mcp.MethodNotificationSubscriptionsAcknowledged):
			// A 2026-07-28 listen stream is (re)open. A list change made
			// while no stream was open (before the first one, between a
			// stream's end and its reopening, or while a new filter
			// replaced the old) was announced to nobody: re-list, and
			// from here on the stream reports each change.
			s.signalRefresh()
			s.signalCatalogRefresh()
			return
		}
		if s.relayNotification(l.name, l.m.opts.OnLog, l.log, n) {
			return
		}
		l.catalogNotification(s, n)
	})
	if err := s.client.Start(sctx); err != nil {
		return nil, "starting transport", err
	}
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = l.preferredVersion()
	req.Params.ClientInfo = clientInfo
	began := time.Now()
	info, err := s.client.Initialize(ictx, req)
	if err != nil {
		return nil, stepInitialize, err
	}
	l.probed(req.Params.ProtocolVersion, info.ProtocolVersion, time.Since(began))
	if err := l.negotiated(s, info.ProtocolVersion); err != nil {
		return nil, stepInitialize, err
	}
	return info, "", nil
}

// logHTTP logs where an HTTP upstream is, without the query string (it may
// carry a token) and with header names only.
func (l *link) logHTTP() {
	where := "(unparsable URL)"
	if u, err := url.Parse(l.cfg.URL); err == nil {
		where = u.Scheme + "://" + u.Host + u.Path
	}
	l.log.Debug("connecting", zap.String("transport", l.kind), zap.String("url", where),
		zap.Strings("header_names", slices.Sorted(maps.Keys(l.cfg.Headers))))
}

// newHTTPClient gives each session its own connection pool, so closing the
// session also ends its idle keep-alive connections and their goroutines.
func newHTTPClient(server string, maxMessage int64, tooLarge func(error)) *http.Client {
	return &http.Client{Transport: &limitTransport{base: http.DefaultTransport.(*http.Transport).Clone(), server: server, limit: maxMessage, tooLarge: tooLarge}}
}

// closeSession ends s: the client (HTTP sessions also send DELETE), then the
// child in stages, then everything s started. It is safe on a partially
// opened session.
func (l *link) closeSession(s *session) {
	if s == nil {
		return
	}
	if s.client != nil {
		if err := s.client.Close(); err != nil {
			l.log.Debug("closing client", zap.Error(err))
		}
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	if s.proc != nil {
		s.proc.stop(l.m.stopGrace, l.m.termGrace, l.log)
	}
	s.wg.Wait()
	if s.http != nil {
		s.http.CloseIdleConnections()
	}
}

// listTools reads every page of tools/list. It sends the requests itself,
// rather than through the client's ListTools, to keep each tool's
// inputSchema exactly as the upstream wrote it (mcp.Tool's decoder rebuilds
// it and drops keywords it does not model).
func (s *session) listTools(ctx context.Context, log *zap.Logger) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	seen := map[string]bool{}
	cursors := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxToolPages {
			return nil, fmt.Errorf("more than %d pages of tools; giving up", maxToolPages)
		}
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		resp, err := s.send(ctx, fmt.Sprintf("mcproxy-tools-%d", s.reqID.Add(1)), string(mcp.MethodToolsList), params)
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			if resp.Error.Code == mcp.METHOD_NOT_FOUND && page == 0 {
				return nil, nil // a server without tools
			}
			return nil, fmt.Errorf("upstream answered error %d: %s", resp.Error.Code, resp.Error.Message)
		}
		var result struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &result); err != nil {
			return nil, fmt.Errorf("decoding page %d: %w", page+1, err)
		}
		for _, raw := range result.Tools {
			t, err := decodeTool(raw)
			if err != nil {
				return nil, fmt.Errorf("decoding page %d: %w", page+1, err)
			}
			if seen[t.Name] {
				log.Warn("upstream listed a tool twice; keeping the first", zap.String("tool", t.Name))
				continue
			}
			seen[t.Name] = true
			tools = append(tools, t)
		}
		if result.NextCursor == "" {
			return withoutInvalidHeaders(tools, log), nil
		}
		if cursors[result.NextCursor] {
			return nil, fmt.Errorf("tools/list cursor %q repeated on page %d", result.NextCursor, page+1)
		}
		cursors[result.NextCursor] = true
		cursor = result.NextCursor
	}
}

// decodeTool decodes one tools/list entry, keeping its schemas verbatim in
// RawInputSchema/RawOutputSchema.
func decodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, err
	}
	if t.Name == "" {
		return t, errors.New("a tool has no name")
	}
	var schemas struct {
		Input  json.RawMessage `json:"inputSchema"`
		Output json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return t, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if len(schemas.Input) > 0 && string(schemas.Input) != "null" {
		t.InputSchema = mcp.ToolInputSchema{}
		t.RawInputSchema = schemas.Input
	}
	if len(schemas.Output) > 0 && string(schemas.Output) != "null" {
		t.OutputSchema = mcp.ToolOutputSchema{}
		t.RawOutputSchema = schemas.Output
	}
	return t, nil
}

// httpTap sits between the mcp-go client and an HTTP transport. On the
// legacy protocol mcp-go sends notifications/cancelled only over stdio, but
// the spec asks for it on every transport, so the tap sends it when a
// request's context ends before its response arrives. It forwards
// everything else, including the protocol version (it is an
// HTTPConnection, so the client leaves cancellation to us).
type httpTap struct {
	transport.HTTPConnection
	s *session
}

func (t *httpTap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.HTTPConnection.SendRequest(ctx, req)
	// On 2026-07-28 ending the request's stream is the cancellation.
	if err != nil && ctx.Err() != nil && req.Method != string(mcp.MethodInitialize) && !t.s.modern.Load() {
		t.s.sendCancelled(req.ID, context.Cause(ctx))
	}
	return resp, err
}

// SetRequestHandler lets the upstream's own requests (ping) reach the client.
func (t *httpTap) SetRequestHandler(h transport.RequestHandler) {
	if b, ok := t.HTTPConnection.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(h)
	}
}

// sendCancelled tells the upstream to stop working on request id. Best
// effort, off the caller's path, bounded, and owned by the session.
func (s *session) sendCancelled(id mcp.RequestId, reason error) {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"requestId": id,
				"reason":    reason.Error(),
			}},
		},
	}
	s.spawn("upstream cancel notice", func() {
		ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
		defer cancel()
		_ = s.tr.SendNotification(ctx, n)
	})
}
