package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/largeargs"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// This file is the MCP face of noa's session hosts (internal/session, which
// knows nothing of MCP): which host a request belongs to, how a tools/call
// and its result become messages of the session's stream, how the result
// the client receives is shaped (ref tag, nudge, size cut), and the Compress
// and read_archive tools.

// sessionIDFunc tells which noa session a request belongs to; "" means
// none (the call passes through unrecorded).
type sessionIDFunc func(ctx context.Context) string

// clientSessionID is the sessionIDFunc for mcp-go: sessionIDFor the
// ClientSession in ctx.
func clientSessionID(stdioID string) sessionIDFunc {
	return func(ctx context.Context) string {
		return sessionIDFor(mcpserver.ClientSessionFromContext(ctx), stdioID)
	}
}

// sessionIDFor is the session id a host is keyed on for an mcp-go client
// session: its own id (the Mcp-Session-Id of streamable HTTP, the
// connection's id for SSE), except that stdio, whose id is the constant
// "stdio", maps to stdioID (see session.NewSessionID) so each run of the
// proxy gets its own session. "" (no session: nil, or a request of the
// 2026-07-28 protocol, which has none) means the call passes through
// unrecorded.
func sessionIDFor(cs mcpserver.ClientSession, stdioID string) string {
	if cs == nil {
		return ""
	}
	if id := cs.SessionID(); id != largeargs.StdioSessionID {
		return id
	}
	return stdioID
}

// argumentsText is a call's arguments as the session records them
// (session.ArgumentsText): the client's own bytes, compacted (issue 28),
// not the decoded map encoded again; a request built without them (in
// process) has its map encoded.
func argumentsText(req mcp.CallToolRequest) string {
	if len(req.Params.RawArguments) > 0 {
		return session.ArgumentsText(req.Params.RawArguments)
	}
	return session.ArgumentsText(rawArguments(req))
}

// rawArguments is a call's arguments as JSON.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	switch v := req.Params.Arguments.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	case []byte:
		return v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		return b
	}
}

// recordedToolName is the name a call is recorded under: for call_tool the
// routed tool id it names ("server:tool"), so protected-tool patterns and
// noa's tool lists see the real tool; otherwise the tool called.
func recordedToolName(req mcp.CallToolRequest) string {
	if req.Params.Name == ToolCall {
		if name, ok := req.GetArguments()["name"].(string); ok && name != "" {
			return name
		}
	}
	return req.Params.Name
}

// compressTool is the Compress tool definition: noa's name, description
// and schema.
func compressTool() mcp.Tool {
	schema, _ := json.Marshal(noa.CompressToolSchema())
	return mcp.NewToolWithRawSchema(noa.CompressToolName, noa.CompressToolDescription, schema)
}

// readArchiveTool is the read_archive tool definition.
func readArchiveTool() mcp.Tool {
	schema, _ := json.Marshal(session.ReadArchiveSchema())
	t := mcp.NewToolWithRawSchema(session.ReadArchiveToolName, session.ReadArchiveDescription, schema)
	t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
	return t
}

// readResultTool is read_archive as a front that keeps only size cuts and
// recall offers it (session.Options.RecallOnly).
func readResultTool() mcp.Tool {
	schema, _ := json.Marshal(session.ReadArchiveSchema())
	t := mcp.NewToolWithRawSchema(session.ReadResultToolName, session.ReadResultDescription, schema)
	t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
	return t
}

// noaFront runs every tools/call of a client session through that
// session's host.
type noaFront struct {
	sessions *session.Manager
	idOf     sessionIDFunc
	// nameOf is the name a call is recorded under: a front that exposes
	// upstream tools under other names (direct mode's server__tool) records
	// the routed "server:tool", so protected_tools and noa's tool lists see
	// one name whatever the mode.
	nameOf func(mcp.CallToolRequest) string
	log    *zap.Logger
	// recallOnly shapes results with their size cuts only: no ref tag and
	// no nudge (Options.NoaRecallOnly).
	recallOnly bool
	// refuse refuses a call whose session cannot record it instead of
	// running it with a note saying so (config noa.on_record_error).
	refuse bool
}

// middleware records and shapes every tools/call through the session's
// host. Compress and read_archive are left to their own handlers (which
// record through the host themselves). A request with no session id passes
// through untouched; one whose host cannot be opened is refused or run
// with a note saying it was not recorded (notRecorded).
func (n *noaFront) middleware(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Name == noa.CompressToolName || req.Params.Name == n.recallTool() {
			return next(ctx, req)
		}
		run := func(ctx context.Context) (*mcp.CallToolResult, error) { return next(ctx, req) }
		h, err := n.host(ctx)
		if err != nil {
			return n.notRecorded(ctx, err, req.Params.Name != ToolRetrieve && req.Params.Name != ToolDescribe, run)
		}
		if h == nil {
			return next(ctx, req)
		}
		if req.Params.Name == ToolRetrieve || req.Params.Name == ToolDescribe {
			return n.meta(ctx, h, req.Params.Name, argumentsText(req), run)
		}
		// The arguments' text is made where they are recorded: for large
		// ones, while the call runs (callArgs).
		args := func() string { return argumentsText(req) }
		return n.callArgs(ctx, h, n.nameOf(req), args, len(req.Params.RawArguments), true, run)
	}
}

// host is the host of the request's session; nil when it has none, an
// error (logged) when it cannot be opened.
func (n *noaFront) host(ctx context.Context) (*session.Host, error) {
	id := n.idOf(ctx)
	if id == "" {
		return nil, nil
	}
	h, err := n.sessions.Host(id)
	if err != nil {
		n.log.Error("opening the session host; the call is not recorded", zap.String("session_id", id), zap.Error(err))
		return nil, err
	}
	return h, nil
}

// notRecorded answers a call its session could not record (err why): an
// upstream call (upstream set) is refused before it runs when the policy
// says so; otherwise the call runs and its result ends with a note saying
// it was not recorded, so the transcript's gap is never silent (issue 26).
// retrieve_tools, describe_tool and read_archive read the proxy's own
// catalogue or archives, so they are never refused.
func (n *noaFront) notRecorded(ctx context.Context, err error, upstream bool, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	if upstream && n.refuse {
		return mcp.NewToolResultError(session.RefusedNote(err)), nil
	}
	res, runErr := run(ctx)
	if runErr != nil {
		return res, runErr
	}
	return withNote(res, session.UnrecordedNote(err, n.refuse)), nil
}

// withNote is res with a text block added after its content; res is not
// modified.
func withNote(res *mcp.CallToolResult, note string) *mcp.CallToolResult {
	out := &mcp.CallToolResult{}
	if res != nil {
		*out = *res
	}
	out.Content = append(append(make([]mcp.Content, 0, len(out.Content)+1), out.Content...), mcp.NewTextContent(note))
	return out
}

// recallTool is the name of the tool that returns archived originals.
func (n *noaFront) recallTool() string {
	if n.recallOnly {
		return session.ReadResultToolName
	}
	return session.ReadArchiveToolName
}

// compress handles the Compress tool.
func (n *noaFront) compress(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h, err := n.host(ctx)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("Compress could not be recorded (%s), so nothing was compressed and no state changed. This is a storage problem on the host, not a mistake in your call.", session.Reason(err))), nil
	}
	if h == nil {
		return mcp.NewToolResultError("Compress is unavailable: this connection has no session. Nothing was changed."), nil
	}
	p, err := h.Compress(ctx, rawArguments(req))
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("Compress could not be recorded (%v), so nothing was compressed and no state changed. This is a storage problem on the host, not a mistake in your call.", err)), nil
	}
	out := mcp.NewToolResultText(p.Text)
	out.IsError = p.IsError
	return out, nil
}

// readArchive handles read_archive; the call and its page are recorded
// like any other tool call (never cut: a page is sized to fit).
func (n *noaFront) readArchive(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h, err := n.host(ctx)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("%s is unavailable: the session cannot be opened (%s). This is a storage problem on the host, not a mistake in your call.", n.recallTool(), session.Reason(err))), nil
	}
	if h == nil {
		return mcp.NewToolResultError("read_archive is unavailable: this connection has no session."), nil
	}
	raw := rawArguments(req)
	return n.call(ctx, h, n.recallTool(), session.ArgumentsText(raw), false, func(ctx context.Context) (*mcp.CallToolResult, error) {
		a, err := session.ParseReadArchiveArgs(raw)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		page, err := h.ReadArchive(ctx, a)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(page.Text)}}
		if page.Note != "" {
			res.Content = append(res.Content, mcp.NewTextContent(page.Note))
		}
		return res, nil
	})
}

// call records a tools/call named tool with arguments args in h, runs it,
// records what it returned with a noa turn (its text cut to size when cut
// is set and it is too large), and returns the result shaped for the
// client: the upstream's content untouched, then a ref tag, then the nudge
// when noa asks for one; a result that was cut comes back head-and-tail
// with a pointer to its archived original. A Go error from run is recorded
// and returned unchanged. The result run returns is never modified.
//
// Both records are written whether or not the client is still waiting (the
// call happened). If the call cannot be recorded it is refused before it
// runs or runs unrecorded, by the policy (notRecorded); if its result
// cannot be, the result comes back with the note that it was not recorded
// (and without ref tag or nudge). Either way the error is logged and the
// session's Recording shows it.
func (n *noaFront) call(ctx context.Context, h *session.Host, tool, args string, cut bool, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	return n.callArgs(ctx, h, tool, func() string { return args }, len(args), cut, run)
}

// callArgs is call with the arguments' text made by args, about size
// bytes: from overlapArgs on, it is made and recorded while the call runs.
func (n *noaFront) callArgs(ctx context.Context, h *session.Host, tool string, args func() string, size int, cut bool, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	// Built only when there is something to log: With costs an allocation
	// and an encoding of its fields on every call.
	logError := func(msg string, err error) {
		n.log.Error(msg, zap.String("session_id", h.ID()), zap.String("tool", tool), zap.Error(err))
	}
	rctx := context.WithoutCancel(ctx)
	// An oversize argument (a write_file's content) is cut like a result:
	// archived once, and held head-and-tail in the session.
	// The call's record reaches the disk with its result's (one flush per
	// call: before the answer with "fsync": "always", within a second with
	// the default "every_second").
	record := func() ([]session.Message, error) {
		return h.RecordUnsynced(rctx, session.Message{CoreMessage: noa.CoreMessage{
			Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: tool, Text: args(),
		}, CutToSize: cut})
	}
	var rec []session.Message
	var res *mcp.CallToolResult
	var err, runErr error
	if size >= overlapArgs && !n.refuse {
		// Recording a large argument takes a while (masked, cut, archived):
		// the call runs meanwhile (issue 13). Its record still precedes
		// its result's, which is recorded once both are done. A call that
		// may be refused for want of its record waits for it instead.
		o := overlap(ctx, run, record)
		res, runErr, rec, err = o.res, o.err, o.rec, o.recErr
		if err != nil {
			logError("recording a tool call; returning its result unrecorded", err)
			if runErr != nil {
				return res, runErr
			}
			return withNote(res, session.UnrecordedNote(err, n.refuse)), nil
		}
	} else {
		if rec, err = record(); err != nil {
			logError("recording a tool call; it is not recorded", err)
			// read_archive reads the session's own archives: never refused.
			return n.notRecorded(ctx, err, tool != n.recallTool(), run)
		}
		res, runErr = run(ctx)
	}
	result := session.Message{CoreMessage: noa.CoreMessage{
		Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: tool, ToolCallID: rec[0].ToolCallID,
	}, IsError: true}
	shown := res
	if runErr != nil {
		result.Text = "[error] " + runErr.Error()
	} else {
		if shown == nil {
			shown = &mcp.CallToolResult{}
		}
		result.Text, result.IsError, result.CutToSize = resultText(shown), shown.IsError, cut
	}
	turn, err := h.Turn(rctx, result)
	if err != nil {
		logError("recording a tool result; returning it unrecorded", err)
		if runErr != nil {
			return res, runErr
		}
		return withNote(res, session.UnrecordedNote(err, n.refuse)), nil
	}
	if runErr != nil {
		return res, runErr
	}
	recorded := turn.Recorded[0]
	if n.recallOnly {
		return shape(shown, recorded, false, session.MessageRef{}, ""), nil
	}
	ref, hasRef := h.Ref(recorded.ID)
	return shape(shown, recorded, hasRef, ref, h.MCPNudge(turn, ref.Ref)), nil
}

// overlapArgs is the size of a call's arguments from which the call runs
// while they are recorded.
const overlapArgs = 64 << 10

// overlapped is what overlap returns: the call's result and error, and
// its record's.
type overlapped struct {
	res    *mcp.CallToolResult
	err    error
	rec    []session.Message
	recErr error
}

// overlap runs run in a goroutine while record runs in this one, and
// returns both outcomes once both are done. A panic in run is raised again
// here, where the tool handler's recovery catches it as it would have.
func overlap(ctx context.Context, run func(context.Context) (*mcp.CallToolResult, error), record func() ([]session.Message, error)) overlapped {
	type outcome struct {
		res   *mcp.CallToolResult
		err   error
		panic any
	}
	done := make(chan outcome, 1) // buffered: the goroutine never blocks
	// The panic is the caller's to re-raise (below), so the goroutine
	// recovers it itself; Go only names it.
	goroutine.Go(nil, "overlapped tool call", func() {
		var o outcome
		defer func() {
			o.panic = recover()
			done <- o
		}()
		o.res, o.err = run(ctx)
	})
	rec, recErr := record()
	o := <-done
	if o.panic != nil {
		panic(o.panic)
	}
	return overlapped{res: o.res, err: o.err, rec: rec, recErr: recErr}
}

// meta records a retrieve_tools or describe_tool call and its result as
// one append to the session, without an fsync of its own (it reaches the
// disk with the session's next fsync, which covers everything written
// before it), and returns the result untouched. No noa turn runs, so no
// ref tag or nudge is added (the messages take their refs and count toward
// the next call's turn): nothing the client is shown depends on the
// record, so a crash that loses the last ones loses nothing the session
// needs. These calls read the proxy's own catalogue and must cost the
// session next to nothing. A Go error from run is recorded and returned
// unchanged; a failed record is logged and the result returned with the
// note that it was not recorded.
func (n *noaFront) meta(ctx context.Context, h *session.Host, tool, args string, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	res, runErr := run(ctx)
	call := session.Message{CoreMessage: noa.CoreMessage{
		Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: tool, Text: args,
	}}
	result := session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: tool}, IsError: true}
	switch {
	case runErr != nil:
		result.Text = "[error] " + runErr.Error()
	case res == nil:
		result.IsError = false
	default:
		result.Text, result.IsError = resultText(res), res.IsError
	}
	if _, err := h.RecordUnsynced(context.WithoutCancel(ctx), call, result); err != nil {
		n.log.Error("recording a tool call; returning its result unrecorded", zap.String("session_id", h.ID()), zap.String("tool", tool), zap.Error(err))
		if runErr == nil {
			return withNote(res, session.UnrecordedNote(err, n.refuse)), nil
		}
	}
	return res, runErr
}

// shape builds what the client receives; res is not modified.
func shape(res *mcp.CallToolResult, rec session.Message, hasRef bool, ref session.MessageRef, nudge string) *mcp.CallToolResult {
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+3)
	if rec.Original != "" {
		out.Content = append(out.Content, mcp.NewTextContent(rec.Text))
		for _, c := range res.Content {
			if !isText(c) {
				out.Content = append(out.Content, c)
			}
		}
		// The structured copy would carry the whole payload again.
		out.StructuredContent = nil
		out.RawStructuredContent = nil
	} else {
		out.Content = append(out.Content, res.Content...)
	}
	if hasRef {
		out.Content = append(out.Content, mcp.NewTextContent(noa.FormatRefTag(ref.Ref, ref.Tokens)))
	}
	if nudge != "" {
		out.Content = append(out.Content, mcp.NewTextContent(nudge))
	}
	return &out
}

// resultText is the text a result is recorded as: its text blocks joined by
// newlines, with each image, audio clip and resource as a short placeholder
// giving its type and size (their bytes are not text the model reads as
// tokens, and the upstream can produce them again). A result with no content
// but structured content is recorded as that JSON.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func contentText(c mcp.Content) string {
	switch v := c.(type) {
	case mcp.TextContent:
		return v.Text
	case *mcp.TextContent:
		return v.Text
	case mcp.ImageContent:
		return placeholder("image", v.MIMEType, base64Size(v.Data))
	case *mcp.ImageContent:
		return placeholder("image", v.MIMEType, base64Size(v.Data))
	case mcp.AudioContent:
		return placeholder("audio", v.MIMEType, base64Size(v.Data))
	case *mcp.AudioContent:
		return placeholder("audio", v.MIMEType, base64Size(v.Data))
	case mcp.EmbeddedResource:
		return resourcePlaceholder(v.Resource)
	case *mcp.EmbeddedResource:
		return resourcePlaceholder(v.Resource)
	case mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", v.URI)
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", v.URI)
	default:
		return fmt.Sprintf("[content %T]", c)
	}
}

func resourcePlaceholder(r mcp.ResourceContents) string {
	switch v := r.(type) {
	case mcp.TextResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, len(v.Text))
	case *mcp.TextResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, len(v.Text))
	case mcp.BlobResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, base64Size(v.Blob))
	case *mcp.BlobResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, base64Size(v.Blob))
	default:
		return "[resource]"
	}
}

func placeholder(kind, mime string, size int) string {
	if mime == "" {
		mime = "unknown type"
	}
	return fmt.Sprintf("[%s, %s, %s]", kind, mime, session.FormatBytes(int64(size)))
}

// base64Size is the decoded size of base64 data.
func base64Size(s string) int {
	n := len(s) * 3 / 4
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return max(n, 0)
}

func isText(c mcp.Content) bool {
	switch c.(type) {
	case mcp.TextContent, *mcp.TextContent:
		return true
	}
	return false
}
