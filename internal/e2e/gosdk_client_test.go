package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestGoSDKClient drives mcproxy (the binary, direct mode, over streamable
// HTTP and over stdio) with the official Go SDK's client (v1.8.0),
// server-everything behind it over stdio, as TestTSClientRelay does with
// the TypeScript SDK: tools, prompts and resources listed, a prompt fetched
// with an argument, a resource and a tool's resource_link read, a
// long-running tool's progress delivered under the client's own token,
// server-everything's sampling and elicitation requests answered by the
// client, the client's roots listed by the server, and the server's log
// messages delivered at the level the client asked for. It runs on each
// transport with the client on 2025-11-25 (server-to-client requests,
// logging/setLevel) and on the newest revision the client and mcproxy
// share (2026-07-28: stateless, the upstream's requests come back as multi
// round-trip input requests, which the Go SDK answers through the same
// handlers, and the log level goes in each request's _meta).
func TestGoSDKClient(t *testing.T) {
	config := everythingDirect(t)
	base, _ := serveHTTP(t, config)
	transports := map[string]func() gosdk.Transport{
		"http": func() gosdk.Transport { return &gosdk.StreamableClientTransport{Endpoint: base + "/mcp"} },
		"stdio": func() gosdk.Transport {
			return &gosdk.CommandTransport{Command: exec.Command(binary, "serve", "--stdio", "--config", everythingDirect(t))}
		},
	}
	for _, tr := range []string{"http", "stdio"} {
		for _, version := range []string{"2025-11-25", ""} {
			name := version
			if name == "" {
				name = "newest"
			}
			t.Run(tr+"/"+name, func(t *testing.T) { testGoSDKClient(t, tr, transports[tr](), version) })
		}
	}
}

// everythingDirect writes a config of mcproxy in direct mode, noa off, in
// front of server-everything over stdio, in a data_dir of its own.
func everythingDirect(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"mode":         "direct",
		"init_timeout": "60s",
		"noa":          map[string]any{"enabled": false},
	})
}

// goSDKRoot is the root the Go SDK client offers.
const goSDKRoot = "file:///tmp/go-sdk-e2e-root"

func testGoSDKClient(t *testing.T, transport string, tr gosdk.Transport, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	var progress []*gosdk.ProgressNotificationParams
	var logs []*gosdk.LoggingMessageParams
	var samplingPrompt, elicitationMessage string
	client := gosdk.NewClient(&gosdk.Implementation{Name: "go-sdk-e2e", Version: "1.0.0"}, &gosdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*gosdk.TextContent); ok {
					samplingPrompt += tc.Text
				}
			}
			return &gosdk.CreateMessageResult{Role: "assistant", Model: "go-sdk-model", Content: &gosdk.TextContent{Text: "the Go SDK client's model answers"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			mu.Lock()
			elicitationMessage = req.Params.Message
			mu.Unlock()
			return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *gosdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *gosdk.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params)
			mu.Unlock()
		},
	})
	client.AddRoots(&gosdk.Root{URI: goSDKRoot, Name: "go-sdk-e2e"})
	cs, err := client.Connect(ctx, tr, &gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting the Go SDK client: %v", err)
	}
	defer cs.Close()
	t.Logf("protocol version: %s", cs.InitializeResult().ProtocolVersion)
	if version != "" && cs.InitializeResult().ProtocolVersion != version {
		t.Fatalf("negotiated %q, want %q", cs.InitializeResult().ProtocolVersion, version)
	}

	var tools []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		tools = append(tools, tool.Name)
	}
	for _, want := range []string{"everything__trigger-long-running-operation", "everything__trigger-sampling-request", "everything__trigger-elicitation-request"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools/list: no %s in %q", want, tools)
		}
	}

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "everything__args-prompt") {
		t.Errorf("prompts/list: no everything__args-prompt in %q", prompts)
	}
	got, err := cs.GetPrompt(ctx, &gosdk.GetPromptParams{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Lisbon"}})
	if err != nil {
		t.Fatalf("prompts/get everything__args-prompt: %v", err)
	}
	if b, _ := json.Marshal(got.Messages); !strings.Contains(string(b), "Lisbon") {
		t.Errorf("prompts/get args-prompt(city=Lisbon): the argument did not reach the server: %s", b)
	}

	var doc string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if doc == "" && strings.HasPrefix(r.URI, "demo://resource/static/document/") {
			doc = r.URI
		}
	}
	if doc == "" {
		t.Fatal("resources/list: no demo://resource/static/document/ resource")
	}
	read := func(uri string) {
		t.Helper()
		res, err := cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		if len(res.Contents) == 0 || res.Contents[0].URI != uri {
			t.Errorf("resources/read %s: got %+v", uri, res.Contents)
		}
	}
	read(doc)
	links, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "everything__get-resource-links", Arguments: map[string]any{"count": 2}})
	if err != nil {
		t.Fatalf("get-resource-links: %v", err)
	}
	var linked []string
	for _, c := range links.Content {
		if l, ok := c.(*gosdk.ResourceLink); ok {
			linked = append(linked, l.URI)
			read(l.URI)
		}
	}
	if len(linked) != 2 {
		t.Errorf("get-resource-links: got %d resource_links, want 2", len(linked))
	}

	text := func(res *gosdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*gosdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	call := func(name string, args map[string]any, token any) string {
		t.Helper()
		params := &gosdk.CallToolParams{Name: name, Arguments: args}
		if token != nil {
			params.SetProgressToken(token)
		}
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatalf("calling %s: %v", name, err)
		}
		if res.IsError {
			t.Errorf("%s: an error result: %s", name, text(res))
		}
		return text(res)
	}

	token := "go-sdk-token-" + version
	if long := call("everything__trigger-long-running-operation", map[string]any{"duration": 1, "steps": 3}, token); !strings.Contains(long, "completed") {
		t.Errorf("long-running operation: got %q", long)
	}
	// Progress may trail the result by a moment (docs/relay.md).
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) != 3 {
		t.Errorf("progress notifications: got %d, want 3", len(progress))
	}
	for i, p := range progress {
		if p.ProgressToken != token || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress %d: token %v, %v/%v; want the client's token %q, %d/3", i, p.ProgressToken, p.Progress, p.Total, token, i+1)
		}
	}
	mu.Unlock()

	sampled := call("everything__trigger-sampling-request", map[string]any{"prompt": "say hi", "maxTokens": 20}, nil)
	if !strings.Contains(sampled, "the Go SDK client's model answers") {
		t.Errorf("sampling: the tool answered %q", sampled)
	}
	elicited := call("everything__trigger-elicitation-request", map[string]any{}, nil)
	if !strings.Contains(elicited, "Ada Lovelace") {
		t.Errorf("elicitation: the tool answered %q", elicited)
	}

	// Roots: the server asks the client for them during the call.
	if roots := call("everything__get-roots-list", map[string]any{}, nil); !strings.Contains(roots, goSDKRoot) {
		t.Errorf("get-roots-list: the tool answered %q, want the client's root %s", roots, goSDKRoot)
	}

	// Logging: on 2025-11-25 the client sets its session's level; on
	// 2026-07-28 the level goes in each request's _meta. The Go SDK client
	// sends logging/setLevel there too, without _meta: over HTTP, whose
	// header names the revision, it is refused as the revision asks
	// (removed), saying where the level goes; over stdio nothing names the
	// revision, and it sets the level of the client's connection.
	// toggle-simulated-logging sends one message at once (random level, so
	// the client asks for debug), then one every 5 s until toggled off.
	toggle := &gosdk.CallToolParams{Name: "everything__toggle-simulated-logging", Arguments: map[string]any{}}
	setLevel := cs.SetLoggingLevel(ctx, &gosdk.SetLoggingLevelParams{Level: "debug"})
	if cs.InitializeResult().ProtocolVersion == "2025-11-25" || transport == "stdio" {
		if setLevel != nil {
			t.Errorf("logging/setLevel on %s over %s: %v", cs.InitializeResult().ProtocolVersion, transport, setLevel)
		}
	}
	if cs.InitializeResult().ProtocolVersion != "2025-11-25" {
		if transport == "http" && (setLevel == nil || !strings.Contains(setLevel.Error(), "io.modelcontextprotocol/logLevel")) {
			t.Errorf("logging/setLevel on %s over HTTP: got %v, want it refused, naming the _meta key that carries the level", cs.InitializeResult().ProtocolVersion, setLevel)
		}
		toggle.Meta = gosdk.Meta{"io.modelcontextprotocol/logLevel": "debug"}
	}
	if _, err := cs.CallTool(ctx, toggle); err != nil {
		t.Fatalf("toggle-simulated-logging: %v", err)
	}
	waitFor(t, 10*time.Second, "a log message from server-everything", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) > 0
	})
	toggle.Meta = nil
	if _, err := cs.CallTool(ctx, toggle); err != nil {
		t.Fatalf("toggle-simulated-logging (off): %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(samplingPrompt, "say hi") {
		t.Errorf("sampling: the client was asked %q, want the tool's prompt", samplingPrompt)
	}
	if elicitationMessage == "" {
		t.Error("elicitation: the client was never asked")
	}
}
