package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/jsonspan"
	"github.com/mcproxy/mcproxy/internal/passthrough"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Meta tool names (retrieve mode).
const (
	ToolRetrieve = "retrieve_tools"
	ToolCall     = "call_tool"
	ToolDescribe = "describe_tool"
)

// maxDescribe caps describe_tool's names so one call cannot dump every schema.
const maxDescribe = 20

// metaTools defines retrieve_tools, call_tool and describe_tool. Their
// definitions sit in every request the client sends, so each word is paid
// for on every turn (issue 17: the menu, noa's tools and the instructions
// together stay under 800 tokens): they say what the model must know to use
// them right (search first, call with the exact id, describe when the
// listed parameters are not enough) and nothing else.
func (s *Server) metaTools() []mcpserver.ServerTool {
	retrieve := mcp.Tool{
		Name: ToolRetrieve,
		Description: "Find tools for a task on every connected server, best first, with the id call_tool takes. " +
			"Search again with other words if none fits.",
		RawInputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"The task in plain words"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Default %d"}},`+
			`"required":["query"]}`, maxRetrieveLimit, s.opts.RetrieveLimit)),
		Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)},
	}
	call := mcp.Tool{
		Name:        ToolCall,
		Description: "Run a tool found with retrieve_tools.",
		RawInputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"Its exact id, e.g. \"git:git_log\""},` +
			`"arguments":{"type":"object"}},` +
			`"required":["name"]}`),
	}
	describe := mcp.Tool{
		Name:        ToolDescribe,
		Description: "Full input schemas by tool id, when the parameters retrieve_tools listed are not enough.",
		RawInputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"names":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":%d}},`+
			`"required":["names"]}`, maxDescribe)),
		Annotations: mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)},
	}
	return []mcpserver.ServerTool{
		{Tool: retrieve, Handler: s.handleRetrieve},
		{Tool: call, Handler: s.handleCall},
		{Tool: describe, Handler: s.handleDescribe},
	}
}

func (s *Server) handleRetrieve(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := s.waitSettled(ctx); err != nil {
		return nil, err
	}
	args := req.GetArguments()
	query, _ := args["query"].(string)
	query = strings.TrimSpace(query)
	if query == "" {
		return mcp.NewToolResultError(`retrieve_tools needs a non-empty "query" string describing the task, e.g. {"query": "read a file"}.`), nil
	}
	limit := s.opts.RetrieveLimit
	if raw, ok := args["limit"]; ok && raw != nil {
		n, ok := raw.(float64)
		if !ok || n != float64(int(n)) || n < 1 || n > maxRetrieveLimit {
			return mcp.NewToolResultError(fmt.Sprintf(`"limit" must be a whole number from 1 to %d (got %s); omit it for the default of %d.`,
				maxRetrieveLimit, compactJSONValue(raw), s.opts.RetrieveLimit)), nil
		}
		limit = int(n)
	}
	if s.learn != nil {
		s.learn.Refresh()
	}
	view := s.viewUpstreams()
	matches, err := s.Retrieve(ctx, query, limit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log.Error("retrieve_tools", zap.Error(err))
		return mcp.NewToolResultError(fmt.Sprintf("Searching tools failed: %v. Retry; if it keeps failing, the mcproxy log has details.", err)), nil
	}
	s.learnSearch(ctx, query, matches)
	if len(matches) == 0 {
		return mcp.NewToolResultText(s.noMatchText(query, view)), nil
	}
	text, err := s.opts.Render(matches)
	if err != nil {
		// A renderer that cannot encode a match must not hide the matches.
		s.log.Warn("rendering retrieve_tools with the configured arm; using the interim renderer", zap.Error(err))
		text, _ = InterimRenderer(matches)
	}
	if matches[0].Weak {
		text = s.weakText(text)
	}
	if line := connectionLine(view, matches); line != "" {
		text += "\n\n" + line
	}
	if line := s.noticeLine(); line != "" {
		text += "\n\n" + line
	}
	return mcp.NewToolResultText(text), nil
}

// noMatchText answers an empty search, naming servers whose tools are
// missing because they are not connected.
func (s *Server) noMatchText(query string, view upstreamView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "No tools match %q. Try other words: the object the tool acts on (file, issue, page) or the action (read, create, search).", query)
	if line := connectionLine(view, nil); line != "" {
		b.WriteString("\n")
		b.WriteString(line)
	}
	if dir := s.serverDirectory(); dir != "" {
		b.WriteString("\n\n")
		b.WriteString(dir)
	}
	if line := s.noticeLine(); line != "" {
		b.WriteString("\n\n")
		b.WriteString(line)
	}
	return b.String()
}

func (s *Server) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := s.waitLaunched(ctx); err != nil {
		return nil, err
	}
	args := req.GetArguments()
	id, _ := args["name"].(string)
	id = strings.TrimSpace(id)
	if id == "" {
		return mcp.NewToolResultError(`call_tool needs "name", the tool id from retrieve_tools (e.g. "filesystem:read_text_file"), and "arguments", an object of the tool's parameters.`), nil
	}
	server, tool, ok := config.SplitToolID(id)
	if !ok {
		return mcp.NewToolResultError(unknownToolText(id, s.suggestions(ctx, id))), nil
	}
	// A call refused before the upstream is still one the user should see
	// failing (issue 30); one to a tool nobody has is not labelled with it.
	start := time.Now()
	refused := func(text string, known bool) (*mcp.CallToolResult, error) {
		res := mcp.NewToolResultError(text)
		var rawErr error
		if !known {
			rawErr = upstream.ErrUnknownTool
		}
		s.observe(ctx, start, server, tool, nil, nil, res, nil, rawErr)
		return res, nil
	}
	toolArgs, problem := toolArguments(args["arguments"])
	if problem != "" {
		t, known := s.tool(id)
		return refused(badArgumentsText(id, problem, t.Schema), known)
	}
	if !s.callable(server, id) {
		if held := s.heldText(server, tool); held != "" {
			return refused(held, true)
		}
		return refused(unknownToolText(id, s.suggestions(ctx, id)), false)
	}
	res, err := s.callUpstream(ctx, server, tool, toolArgs, innerArguments(req.Params.RawArguments))
	s.learnCall(ctx, id, res, err)
	return res, err
}

// callable reports whether a call to id should reach the upstream manager:
// the tool is in the catalog, or its server is configured but not ready (the
// manager then reconnects on demand or explains why it cannot), or ready
// with its tool list not in the catalog yet (a call made while the server
// comes up; the manager knows its tools).
func (s *Server) callable(server, id string) bool {
	if _, ok := s.tool(id); ok {
		return true
	}
	for _, st := range s.up.Status() {
		if st.Server == server {
			s.mu.RLock()
			_, listed := s.tools[server]
			s.mu.RUnlock()
			return st.State != upstream.StateReady || !listed
		}
	}
	return false
}

// callUpstream runs one upstream tool and turns Go errors into tool errors a
// model can act on. Results pass through with content, structuredContent and
// isError untouched, except that an error result whose arguments plainly do
// not fit the tool's schema gains a text block naming what to fix. argsJSON
// is the client's JSON text of args (nil when unknown): the upstream and the
// call history get those bytes rather than args encoded again.
func (s *Server) callUpstream(ctx context.Context, server, tool string, args map[string]any, argsJSON json.RawMessage) (*mcp.CallToolResult, error) {
	if p := s.pass.Peer(ctx); p != nil {
		ctx = upstream.WithPeer(ctx, p)
	}
	if len(argsJSON) > 0 {
		ctx = upstream.WithArgumentsJSON(ctx, argsJSON)
	}
	start := time.Now()
	raw, rawErr := s.up.Call(ctx, server, tool, args)
	res, err := s.upstreamResult(ctx, server, tool, args, raw, rawErr)
	s.observe(ctx, start, server, tool, args, argsJSON, res, err, rawErr)
	return res, err
}

// innerArguments is the JSON text of call_tool's "arguments" object in
// raw, the call's own arguments as the client sent them: nil unless raw is
// an object that has that key, written plainly, once, for an object.
func innerArguments(raw json.RawMessage) json.RawMessage {
	var inner json.RawMessage
	n := 0
	if !jsonspan.ObjectMembers(raw, func(key []byte, s, e int) bool {
		if string(key) == "arguments" {
			inner, n = raw[s:e], n+1
		}
		return true
	}) || n != 1 || len(inner) == 0 || inner[0] != '{' {
		return nil
	}
	return inner
}

// upstreamResult is callUpstream's answer for the manager's res and err.
func (s *Server) upstreamResult(ctx context.Context, server, tool string, args map[string]any, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	id := config.ToolID(server, tool)
	if err == nil {
		if res == nil {
			return mcp.NewToolResultError(fmt.Sprintf("%s returned no result.", id)), nil
		}
		res = s.pass.ToolResult(server, res)
		out := *res
		// The front negotiates its own protocol version with the client; the
		// upstream's result-type marker belongs to the other connection,
		// but for a 2026-07-28 upstream's question to a 2026-07-28
		// client's call, forwarded to it as sent (upstream.Forward),
		// which goes back as it came.
		if out.ResultType != mcp.ResultTypeInputRequired {
			out.ResultType = ""
		}
		if out.IsError {
			if t, ok := s.tool(id); ok {
				if p := argumentProblems(t.Schema, args); p != "" {
					named := id
					if s.opts.Mode == config.ModeDirect {
						named = ""
					}
					out.Content = append(slices.Clone(out.Content), mcp.NewTextContent(mismatchText(named, p)))
				}
			}
		}
		return &out, nil
	}
	if coded := passthrough.UpstreamError(ctx, err); coded != nil {
		// A 2026-07-28 upstream's own answer to the client's call,
		// forwarded to it as sent: the client gets it as the upstream
		// gave it.
		return nil, coded
	}
	var down *upstream.DownError
	var timeout *upstream.TimeoutError
	switch {
	case isHeld(err):
		return mcp.NewToolResultError(err.Error()), nil
	case errors.As(err, &timeout):
		return mcp.NewToolResultError(timeoutText(timeout)), nil
	case errors.As(err, &down):
		return mcp.NewToolResultError(downText(down, time.Now())), nil
	case errors.Is(err, upstream.ErrUnknownServer), errors.Is(err, upstream.ErrUnknownTool):
		return mcp.NewToolResultError(unknownToolText(id, s.suggestions(ctx, id))), nil
	case errors.Is(err, mcp.ErrInvalidParams):
		t, _ := s.tool(id)
		return mcp.NewToolResultError(rejectedText(id, err, t.Schema, args)), nil
	case ctx.Err() != nil:
		// The client cancelled or went away; nobody reads a tool error.
		return nil, ctx.Err()
	}
	s.log.Warn("upstream call failed", zap.String("upstream", server), zap.String("tool", tool), zap.Error(err))
	return mcp.NewToolResultError(fmt.Sprintf("Calling %s failed: %v. Retry once; if it fails again, use another tool or tell the user the %q server has a problem.", id, err, server)), nil
}

// toolArguments accepts call_tool's "arguments": an object, nothing (no
// arguments) or, leniently, a string holding a JSON object, since models
// sometimes double-encode. It returns a problem text for anything else.
func toolArguments(v any) (map[string]any, string) {
	switch a := v.(type) {
	case nil:
		return map[string]any{}, ""
	case map[string]any:
		return a, ""
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(a), &m); err == nil && m != nil {
			return m, ""
		}
		return nil, `"arguments" is a string; it must be a JSON object such as {"path": "/tmp/a.txt"}`
	}
	return nil, fmt.Sprintf(`"arguments" is %s; it must be a JSON object of the tool's parameters`, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	}
	return "not an object"
}

// suggestions returns up to three ids close to id: typo-level matches by edit
// distance first, then search hits for the words in id.
func (s *Server) suggestions(ctx context.Context, id string) []string {
	const n = 3
	if !s.worthSuggesting(id) {
		return nil
	}
	out := suggest(id, s.catalogIDs(), n)
	if len(out) < n && s.ix != nil {
		words := strings.NewReplacer(":", " ", "_", " ", "-", " ", "__", " ").Replace(id)
		if hits, err := s.Retrieve(ctx, words, n); err == nil {
			for _, h := range hits {
				if len(out) < n && !slices.Contains(out, h.Tool.ID) {
					out = append(out, h.Tool.ID)
				}
			}
		}
	}
	return out
}

func (s *Server) handleDescribe(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := s.waitSettled(ctx); err != nil {
		return nil, err
	}
	var names []string
	switch v := req.GetArguments()["names"].(type) {
	case string:
		names = []string{v}
	case []any:
		for _, n := range v {
			if str, ok := n.(string); ok && strings.TrimSpace(str) != "" {
				names = append(names, strings.TrimSpace(str))
			}
		}
	}
	if len(names) == 0 {
		return mcp.NewToolResultError(`describe_tool needs "names", a list of tool ids from retrieve_tools, e.g. {"names": ["filesystem:read_text_file"]}.`), nil
	}
	if len(names) > maxDescribe {
		return mcp.NewToolResultError(fmt.Sprintf("describe_tool takes at most %d names per call (got %d); split the list.", maxDescribe, len(names))), nil
	}
	type described struct {
		Name         string          `json:"name"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
		Error        string          `json:"error,omitempty"`
		// Note marks a tool known from the last run (warm.go).
		Note string `json:"note,omitempty"`
	}
	s.viewUpstreams()
	out := make([]described, 0, len(names))
	found := 0
	for _, id := range names {
		t, ok := s.tool(id)
		if !ok {
			why := unknownToolText(id, s.suggestions(ctx, id))
			if server, tool, split := config.SplitToolID(id); split && s.heldText(server, tool) != "" {
				why = s.heldText(server, tool)
			}
			out = append(out, described{Name: id, Error: why})
			continue
		}
		found++
		s.learnDescribe(ctx, id)
		d := described{Name: id, Description: t.Description, InputSchema: schemaOrEmpty(t.Schema)}
		if mt, ok := s.up.MCPTool(t.Server, t.Name); ok {
			d.OutputSchema = outputSchema(mt)
		}
		if s.isStale(t.Server) {
			d.Note = staleNote(t.Server)
		}
		out = append(out, d)
	}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding describe_tool answer: %w", err)
	}
	res := mcp.NewToolResultText(string(text))
	res.IsError = found == 0
	return res, nil
}

// schemaOrEmpty returns schema, or the empty object schema for a tool that
// has none, so every exposed tool has a valid inputSchema.
func schemaOrEmpty(schema json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(schema))) == 0 || string(schema) == "null" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return schema
}

// outputSchema returns a tool's output schema JSON, nil when it has none.
func outputSchema(t mcp.Tool) json.RawMessage {
	if len(t.RawOutputSchema) > 0 {
		return t.RawOutputSchema
	}
	if t.OutputSchema.Type == "" {
		return nil
	}
	b, err := json.Marshal(t.OutputSchema)
	if err != nil {
		return nil
	}
	return b
}
