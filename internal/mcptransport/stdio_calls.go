package mcptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// stdioCalls is the lean path of a tools/call over stdio (issue 28): the
// stdin reader hands a tools/call line straight to the MCP server's
// HandleMessage, on the stdio client session's context, and writes the
// answer line back; the same dispatch, middlewares and handlers mcp-go's
// StdioServer would run, without its hops. Through the StdioServer a call
// line crossed a pipe to mcp-go's reader, a goroutine per line, was decoded
// five times before HandleMessage (three response handlers, a parse to a
// raw message, the method) and waited in its worker queue: about a tenth
// of the proxy's CPU on an echo, and three goroutine hand-offs.
//
// Every other line, a call that arrives before the StdioServer has made
// its session's context or after it stopped, and a call while every
// worker is busy go through the StdioServer as before.
type stdioCalls struct {
	mcp *mcpserver.MCPServer
	log *zap.Logger
	// out takes the answer lines (the batches' Write, so a batch's
	// answers are still gathered and lifted arguments forgotten).
	out io.Writer
	// work hands a call to a worker; slots holds one token per call taken
	// and not yet answered, so a call is taken only while a worker is free.
	work  chan stdioCall
	slots chan struct{}

	mu      sync.Mutex
	stopped bool
	ctx     context.Context // the workers'; nil until started
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// stdioCall is one tools/call line and its request id.
type stdioCall struct {
	id   json.RawMessage
	line []byte
}

// stdioCallWorkers is how many calls the lean path runs at once: as many
// workers as mcp-go's StdioServer has by default. They live as long as the
// session, so their stacks stay grown (a goroutine per call would grow one
// for every call). More calls at once queue in the StdioServer.
const stdioCallWorkers = 5

func newStdioCalls(srv *mcpserver.MCPServer, out io.Writer, log *zap.Logger) *stdioCalls {
	return &stdioCalls{mcp: srv, log: log, out: out, work: make(chan stdioCall), slots: make(chan struct{}, stdioCallWorkers)}
}

// start takes the StdioServer's session context (its context function's
// argument, which carries the stdio client session), starts the workers on
// it and returns it unchanged. stop cancels it for the calls served here.
func (c *stdioCalls) start(ctx context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx != nil || c.stopped {
		return ctx
	}
	wctx, cancel := context.WithCancel(ctx)
	c.ctx, c.cancel = wctx, cancel
	for range stdioCallWorkers {
		c.wg.Add(1)
		goroutine.Go(c.log, "stdio tools/call worker", func() {
			defer c.wg.Done()
			c.run(wctx)
		})
	}
	return ctx
}

// stop cancels the calls in flight, as the StdioServer cancels its own
// when its input ends, and waits for them to be answered and the workers
// to end.
func (c *stdioCalls) stop() {
	c.mu.Lock()
	c.stopped = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
}

// run is one worker: it answers the calls handed to it until ctx ends.
func (c *stdioCalls) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-c.work:
			c.answer(c.handle(ctx, w.id, w.line))
			<-c.slots
		}
	}
}

// serve hands line, one message without surrounding space, to a free
// worker when it is a tools/call request, and reports whether it did.
func (c *stdioCalls) serve(line []byte) bool {
	id, ok := toolsCallID(line)
	if !ok {
		return false
	}
	c.mu.Lock()
	ctx := c.ctx
	c.mu.Unlock()
	if ctx == nil {
		return false
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return false
	}
	// A slot was free, so a worker is waiting or about to, unless the
	// workers were stopped.
	select {
	case c.work <- stdioCall{id: id, line: line}:
		return true
	case <-ctx.Done():
		<-c.slots
		return false
	}
}

// handle is HandleMessage with the StdioServer's recovery: a panic is
// logged and answered with the Internal error mcp-go's worker sends.
func (c *stdioCalls) handle(ctx context.Context, id json.RawMessage, line []byte) (resp any) {
	defer goroutine.Recover(c.log, "stdio tools/call", func(v any) {
		var rid any
		_ = json.Unmarshal(id, &rid)
		resp = mcp.NewJSONRPCError(mcp.NewRequestId(rid), mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", v), nil)
	})
	return c.mcp.HandleMessage(ctx, line)
}

// answer writes resp as one line, as the StdioServer's writeResponse does.
func (c *stdioCalls) answer(resp any) {
	if resp == nil {
		return
	}
	b, err := json.Marshal(resp)
	if err == nil {
		_, err = c.out.Write(append(b, '\n'))
	}
	if err != nil {
		c.log.Error("writing a tools/call response", zap.Error(err))
	}
}

// toolsCallID is the id of line when it is one JSON-RPC 2.0 tools/call
// request: a valid JSON object with that method and an id that is not
// null. Anything else (a batch, a notification, an escaped method name)
// is not the lean path's.
func toolsCallID(line []byte) (json.RawMessage, bool) {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return nil, false
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
	}
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return nil, false
	}
	if m.Method != string(mcp.MethodToolsCall) || m.JSONRPC != mcp.JSONRPC_VERSION || !hasID(m.ID) {
		return nil, false
	}
	return m.ID, true
}
