package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Issue 15: each upstream is spoken to in a revision it supports, and
// mcproxy bridges the two where its client speaks the other one. The
// upstream here is written for 2026-07-28: its tools ask for input with
// multi round-trip results, which mcp-go's server turns into
// server-to-client requests for a 2025-11-25 client; it speaks both, so
// "protocol" picks the revision mcproxy speaks to it. Front clients of
// both revisions call it:
//
//	upstream 2026-07-28, client 2025-11-25: input_required -> server-to-client requests
//	upstream 2026-07-28, client 2026-07-28: input_required -> input_required
//	upstream 2025-11-25, client 2026-07-28: server-to-client requests -> input_required
//	upstream 2025-11-25, client 2025-11-25: server-to-client requests both ways

const modernUpstreamEnv = "MCPROXY_TEST_MODERN_UPSTREAM"

func init() {
	if os.Getenv(modernUpstreamEnv) == "" {
		return
	}
	if err := mcpserver.ServeStdio(newModernUpstream()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// newModernUpstream is a real mcp-go server whose tools ask the client's
// model, user and roots through input_required results, report the
// revision they were called in, and add a tool (list_changed); it has a
// prompt and a resource.
func newModernUpstream() *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("modern-upstream", "1", mcpserver.WithToolCapabilities(true),
		mcpserver.WithPromptCapabilities(true), mcpserver.WithResourceCapabilities(true, true), mcpserver.WithLogging())
	tool := func(name string) mcp.Tool { return mcp.NewTool(name, mcp.WithDescription(name)) }
	srv.AddTool(tool("revision"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("revision=" + mcpserver.RequestProtocolVersion(ctx)), nil
	})
	srv.AddTool(tool("ask"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res := mcpserver.SamplingResponse(req.Params.InputResponses, "q"); res != nil {
			// A retry's answer decodes with its content as a map;
			// a bridged server-to-client answer, as typed content.
			content, err := mcp.ParseSamplingContent(res.Content)
			if err != nil {
				return mcp.NewToolResultError("decoding the model's answer: " + err.Error()), nil
			}
			return mcp.NewToolResultText("model said: " + textOf(content)), nil
		}
		var p mcp.CreateMessageParams
		p.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("what is 2+2?")}}
		p.MaxTokens = 10
		return mcpserver.NewInputRequestBuilder("ask").Sample("q", p).ToolResult(), nil
	})
	srv.AddTool(tool("form"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res := mcpserver.ElicitationResponse(req.Params.InputResponses, "name"); res != nil {
			return mcp.NewToolResultText(fmt.Sprintf("action=%s name=%v", res.Action, res.Content.(map[string]any)["name"])), nil
		}
		return mcpserver.NewInputRequestBuilder("form").Elicit("name", mcp.ElicitationParams{
			Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}}},
		}).ToolResult(), nil
	})
	srv.AddTool(tool("roots"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res := mcpserver.RootsResponse(req.Params.InputResponses, "r"); res != nil {
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return mcp.NewToolResultText("roots=" + strings.Join(uris, ",")), nil
		}
		return mcpserver.NewInputRequestBuilder("roots").Roots("r").ToolResult(), nil
	})
	srv.AddTool(tool("steps"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := 1; i <= 2; i++ {
			if token != nil {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i, "total": 2,
				})
			}
		}
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "steps", "info from steps"))
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelDebug, "steps", "debug from steps"))
		time.Sleep(100 * time.Millisecond) // mcp-go's server may write a result before the notifications it queued
		return mcp.NewToolResultText(fmt.Sprintf("token seen upstream: %v", token)), nil
	})
	srv.AddTool(tool("touch"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "modern://note"})
		return mcp.NewToolResultText("touched"), nil
	})
	srv.AddTool(mcp.NewTool("add", mcp.WithDescription("adds a tool"), mcp.WithString("name", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv.AddTool(tool(req.GetString("name", "")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("fresh"), nil
			})
			return mcp.NewToolResultText("added"), nil
		})
	srv.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who")), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello "+req.Params.Arguments["who"]))}), nil
	})
	srv.AddPrompt(mcp.NewPrompt("confirm"), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if res := mcpserver.RootsResponse(req.Params.InputResponses, "r"); res != nil && len(res.Roots) > 0 {
			return mcp.NewGetPromptResult("confirm", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("confirmed under "+res.Roots[0].URI))}), nil
		}
		return mcpserver.NewInputRequestBuilder("confirm").Roots("r").PromptResult(), nil
	})
	srv.AddResource(mcp.NewResource("modern://note", "note"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "modern://note", Text: "a note"}}, nil
	})
	return srv
}

// startModernUpstream serves newModernUpstream over kind ("stdio": this
// test binary as a child; "http": streamable HTTP in process, with every
// request body it received in the returned log), spoken to in protocol
// ("" = negotiated).
func startModernUpstream(t *testing.T, kind, protocol string) (config.ServerConfig, *bodyLog) {
	t.Helper()
	if kind == "stdio" {
		return config.ServerConfig{
			Command: os.Args[0], Args: []string{"-test.run=^$"},
			Env: map[string]string{modernUpstreamEnv: "1"}, Protocol: protocol,
		}, nil
	}
	bodies := &bodyLog{}
	h := mcpserver.NewStreamableHTTPServer(newModernUpstream())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies.mu.Lock()
		bodies.all = append(bodies.all, string(b))
		bodies.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return config.ServerConfig{URL: ts.URL + "/mcp", Protocol: protocol}, bodies
}

// bodyLog is what an HTTP upstream received.
type bodyLog struct {
	mu  sync.Mutex
	all []string
}

func (b *bodyLog) has(parts ...string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range b.all {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(body, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestRevisionNegotiated: unpinned, a server that speaks both revisions
// is spoken to in 2025-11-25 (see settleLegacy in internal/upstream), and
// one that speaks only 2026-07-28 in that.
// inputSampling finds a sampling request sent as an input request (in an
// input_required result), not as a server-to-client request.
var inputSampling = regexp.MustCompile(`"inputRequests":\{"[^"]*":\{"method":"sampling/createMessage"`)

func TestRevisionNegotiated(t *testing.T) {
	only := mcpserver.NewStreamableHTTPServer(newModernUpstream(), mcpserver.WithStreamableHTTPProtocolVersions(mcp.LATEST_PROTOCOL_VERSION))
	ts := httptest.NewServer(only)
	t.Cleanup(ts.Close)
	dual, _ := startModernUpstream(t, "stdio", "")
	f := startRelayFront(t, map[string]config.ServerConfig{"dual": dual, "only": {URL: ts.URL + "/mcp"}})
	c := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	for tool, want := range map[string]string{
		"dual__revision": "revision=" + mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"only__revision": "revision=" + mcp.LATEST_PROTOCOL_VERSION,
		"dual__ask":      "model said: four, said the client's model",
		"only__ask":      "model said: four, said the client's model",
	} {
		if got := c.call(t, tool, nil); got != want {
			t.Errorf("%s: got %q, want %q", tool, got, want)
		}
	}
}

// TestRevisions runs every pair of upstream and client revisions over
// both upstream transports: tools listed and called, the upstream's
// sampling, elicitation and roots questions answered by the client in its
// own revision, a prompt fetched, a resource read, and a tool the upstream
// adds while running reaching the client's list.
func TestRevisions(t *testing.T) {
	for _, kind := range []string{"stdio", "http"} {
		for _, up := range []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
			for _, cl := range []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
				t.Run(fmt.Sprintf("%s/upstream-%s/client-%s", kind, up, cl), func(t *testing.T) {
					testRevisions(t, kind, up, cl)
				})
			}
		}
	}
}

func testRevisions(t *testing.T, kind, upRev, clientRev string) {
	// The upstream speaks both revisions; unpinned, mcproxy would pick
	// 2025-11-25 (TestRevisionNegotiated), so each row pins its revision.
	sc, bodies := startModernUpstream(t, kind, upRev)
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	version := clientRev
	if mcp.IsModernProtocol(clientRev) {
		version = "" // dialFront's newest, without the legacy GET stream
	}
	c := dialFront(t, f.url, version, answeringClient())
	if got := c.ProtocolVersion(); got != clientRev {
		t.Fatalf("the client speaks %s, want %s", got, clientRev)
	}
	if got := c.GetTransport().(*transport.StreamableHTTP).RequiresLegacyProtocol(); got != !mcp.IsModernProtocol(clientRev) {
		t.Fatalf("the client requires the legacy protocol: %v, want %v", got, !mcp.IsModernProtocol(clientRev))
	}

	if got, want := c.call(t, "up__revision", nil), "revision="+upRev; got != want {
		t.Fatalf("up__revision: got %q, want %q (the revision mcproxy speaks to the upstream)", got, want)
	}
	for _, tc := range []struct{ tool, want string }{
		{"up__ask", "model said: four, said the client's model"},
		{"up__form", "action=accept name=Ada"},
		{"up__roots", "roots=file:///work/client-root"},
	} {
		if got := c.call(t, tc.tool, nil); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.tool, got, tc.want)
		}
	}
	sent := f.sent()
	inputs := strings.Count(sent, `"resultType":"input_required"`)
	asked := strings.Count(sent, `"method":"sampling/createMessage"`) - len(inputSampling.FindAllString(sent, -1))
	if modern := mcp.IsModernProtocol(upRev) && mcp.IsModernProtocol(clientRev); modern != strings.Contains(sent, `"inputRequests":{"q":`) {
		// Both sides on 2026-07-28: the call goes upstream once and the
		// upstream's own input request reaches the client under its own
		// key (issue 29); otherwise mcproxy asks under its own.
		t.Errorf("the upstream's input request reached the client under its own key \"q\": %v, want %v", !modern, modern)
	}
	if mcp.IsModernProtocol(clientRev) {
		if inputs != 3 {
			t.Errorf("the front sent %d input_required results, want 3 (one per upstream question)", inputs)
		}
		if asked != 0 {
			t.Errorf("the front sent a 2026-07-28 client %d sampling/createMessage requests, want none (it asks through input_required)", asked)
		}
	} else {
		if inputs != 0 {
			t.Errorf("the front sent a 2025-11-25 client %d input_required results, want none", inputs)
		}
		if asked != 1 {
			t.Errorf("the front sent %d sampling/createMessage requests, want 1", asked)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prompt, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "up__greet", Arguments: map[string]string{"who": clientRev}}})
	if err != nil || len(prompt.Messages) != 1 || textOf(prompt.Messages[0].Content) != "hello "+clientRev {
		t.Errorf("prompts/get up__greet: got %+v, %v; want hello %s", prompt, err, clientRev)
	}
	// A prompt that asks for input outside any tool call has no client
	// to ask: a clear error, not the input_required result passed on as
	// a prompt. (On 2025-11-25 the upstream's SDK asks with roots/list,
	// which mcproxy answers the same way.) With the upstream on
	// 2026-07-28, the prompts/get goes upstream as the client sent it and
	// the upstream's question comes back to the client, which answers it
	// (issue 29): as it came to a 2026-07-28 client, as a roots/list
	// request to a 2025-11-25 one.
	confirm, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "up__confirm"}})
	if mcp.IsModernProtocol(upRev) {
		if err != nil || len(confirm.Messages) != 1 || textOf(confirm.Messages[0].Content) != "confirmed under file:///work/client-root" {
			t.Errorf("prompts/get up__confirm: got %+v, %v; want the prompt, answered with the client's roots", confirm, err)
		}
	} else if err == nil || !strings.Contains(err.Error(), "no client to ask") {
		t.Errorf("prompts/get up__confirm: got %v, want an error saying there is no client to ask", err)
	}
	read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "modern://note"}})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].(mcp.TextResourceContents).Text != "a note" {
		t.Errorf("resources/read modern://note: got %+v, %v; want a note", read, err)
	}

	// Progress comes back with the client's own token; log messages at
	// the level a 2025-11-25 client set (on 2026-07-28 mcproxy declares
	// it in each request's _meta upstream).
	if !mcp.IsModernProtocol(clientRev) {
		var lr mcp.SetLevelRequest
		lr.Params.Level = mcp.LoggingLevelDebug
		if err := c.SetLevel(ctx, lr); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.call(t, "up__steps", &mcp.Meta{ProgressToken: "client-token-3"}); !strings.Contains(got, "token seen upstream: mcproxy-up-") {
		t.Errorf("up__steps: upstream saw %q, want mcproxy's own token", got)
	}
	waitFor(t, "2 progress notifications with the client's token", func() bool {
		n := 0
		for _, p := range c.notifications("notifications/progress") {
			if p.Params.AdditionalFields["progressToken"] == "client-token-3" {
				n++
			}
		}
		return n == 2
	})
	if !mcp.IsModernProtocol(clientRev) {
		waitFor(t, "the upstream's info and debug log messages", func() bool {
			n := 0
			for _, m := range c.notifications("notifications/message") {
				if m.Params.AdditionalFields["logger"] == "steps" {
					n++
				}
			}
			return n == 2
		})
	}

	// A 2025-11-25 client's subscription reaches the upstream (on
	// 2026-07-28 as the filter of mcproxy's subscriptions/listen stream)
	// and the upstream's update comes back. (A 2026-07-28 client
	// subscribes with its own subscriptions/listen, which is the front's
	// business, not the upstream revision's.)
	if !mcp.IsModernProtocol(clientRev) {
		resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(77)),
			Method: string(mcp.MethodResourcesSubscribe), Params: map[string]any{"uri": "modern://note"},
		})
		if err != nil || resp.Error != nil {
			t.Fatalf("resources/subscribe: got %v / %+v", err, resp)
		}
		if kind == "http" && mcp.IsModernProtocol(upRev) {
			// mcp-go's server (v1.2.1) broadcasts resources/updated to no
			// subscriptions/listen stream over HTTP (it leaves the
			// per-URI fan-out to the application, which cannot reach
			// those streams), so what is checked here is mcproxy's part:
			// the listen stream it opened names the resource.
			waitFor(t, "a subscriptions/listen naming modern://note", func() bool {
				return bodies.has(`"method":"subscriptions/listen"`, `"resourceSubscriptions":["modern://note"]`)
			})
		} else {
			checkUpdated(t, c)
		}
	}

	// A tool added upstream reaches the client: on 2026-07-28 the
	// upstream announces it on mcproxy's subscriptions/listen stream.
	if got := c.callArgs(t, "up__add", map[string]any{"name": "fresh"}, nil); got != "added" {
		t.Fatalf("up__add: got %q", got)
	}
	waitFor(t, "the added tool to reach the client's list", func() bool {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		return err == nil && slices.ContainsFunc(res.Tools, func(tl mcp.Tool) bool { return tl.Name == "up__fresh" })
	})
	if got := c.call(t, "up__fresh", nil); got != "fresh" {
		t.Errorf("up__fresh: got %q, want fresh", got)
	}
}

// checkUpdated touches the subscribed modern://note upstream until c gets
// its notifications/resources/updated (the listen stream reopens with a
// new filter a moment after the subscription).
func checkUpdated(t *testing.T, c *frontClient) {
	t.Helper()
	updated := func() bool {
		for _, n := range c.notifications(string(mcp.MethodNotificationResourceUpdated)) {
			if n.Params.AdditionalFields["uri"] == "modern://note" {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !updated() {
		if time.Now().After(deadline) {
			t.Fatal("no notifications/resources/updated for modern://note within 10s of subscribing")
		}
		c.call(t, "up__touch", nil)
		time.Sleep(50 * time.Millisecond)
	}
}
