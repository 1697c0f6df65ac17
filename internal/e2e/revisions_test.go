package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRevisionsGoSDK (issue 15): the mcproxy binary in front of the Go
// SDK's conformance everything-server twice over stdio, one spoken to in
// 2026-07-28 ("protocol" pins it: the server speaks both, and unpinned
// mcproxy picks 2025-11-25) and one in 2025-11-25 (negotiated). A Go SDK
// client on 2026-07-28 (stateless) and an mcp-go client on 2025-11-25
// each list and call tools, fetch a prompt, read a resource, and answer a
// sampling request of each upstream: the 2025-11-25 upstream's
// server-to-client request reaches the stateless client as an
// input_required answer, the 2026-07-28 upstream's input_required result
// reaches the 2025-11-25 client as a server-to-client request.
func TestRevisionsGoSDK(t *testing.T) {
	ref := referenceServer(t)
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"modern": map[string]any{"command": ref, "protocol": mcp.LATEST_PROTOCOL_VERSION},
			"legacy": map[string]any{"command": ref},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "30s",
		"noa":          map[string]any{"enabled": false}, // results exactly as the upstreams sent them
	})
	base, p := serveHTTP(t, config, "--mode", "direct")
	url := base + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const answer = "Paris, said the client's model"
	want := map[string]string{
		"modern__test_input_required_result_sampling": "Sampling response: " + answer,
		"legacy__test_sampling":                       "LLM response: " + answer,
		"modern__test_simple_text":                    "This is a simple text response for testing.",
		"legacy__test_simple_text":                    "This is a simple text response for testing.",
	}
	args := map[string]any{"prompt": "What is the capital of France?"}

	t.Run("go-sdk client on 2026-07-28", func(t *testing.T) {
		gc := gosdk.NewClient(&gosdk.Implementation{Name: "e2e-gosdk", Version: "0"}, &gosdk.ClientOptions{
			CreateMessageHandler: func(context.Context, *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) {
				return &gosdk.CreateMessageResult{Role: "assistant", Model: "client-model", Content: &gosdk.TextContent{Text: answer}}, nil
			},
		})
		cs, err := gc.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("connecting: %v", err)
		}
		defer cs.Close()
		if got := cs.InitializeResult().ProtocolVersion; got != mcp.LATEST_PROTOCOL_VERSION {
			t.Fatalf("the Go SDK client speaks %s, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, tl := range tools.Tools {
			listed[tl.Name] = true
		}
		for name, w := range want {
			if !listed[name] {
				t.Errorf("%s is not listed", name)
				continue
			}
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if got := gosdkText(res.Content); got != w || res.IsError {
				t.Errorf("%s: got %q (isError %v), want %q", name, got, res.IsError, w)
			}
		}
		for _, server := range []string{"modern", "legacy"} {
			pr, err := cs.GetPrompt(ctx, &gosdk.GetPromptParams{Name: server + "__test_simple_prompt"})
			if err != nil || len(pr.Messages) != 1 || gosdkText([]gosdk.Content{pr.Messages[0].Content}) != "This is a simple prompt for testing." {
				t.Errorf("prompts/get %s__test_simple_prompt: got %+v, %v", server, pr, err)
			}
		}
		rr, err := cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text == "" {
			t.Errorf("resources/read test://static-text: got %+v, %v", rr, err)
		}
	})

	t.Run("mcp-go client on 2025-11-25", func(t *testing.T) {
		// The standalone GET stream is where mcp-go's front sends a
		// 2025-11-25 client its server-to-client requests.
		c, err := client.NewStreamableHttpClient(url, transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		c = client.NewClient(c.GetTransport(), client.WithSamplingHandler(samplerFunc(func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(answer)}, Model: "client-model"}, nil
		})), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
		t.Cleanup(func() { c.Close() })
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var init mcp.InitializeRequest
		init.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcpgo", Version: "0"}
		res, err := c.Initialize(ctx, init)
		if err != nil {
			t.Fatal(err)
		}
		if res.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
			t.Fatalf("the mcp-go client speaks %s, want %s", res.ProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		}
		for name, w := range want {
			if got := text(callTool(t, c, name, args)); got != w {
				t.Errorf("%s: got %q, want %q", name, got, w)
			}
		}
		pr, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "modern__test_simple_prompt"}})
		if err != nil || len(pr.Messages) != 1 {
			t.Errorf("prompts/get modern__test_simple_prompt: got %+v, %v", pr, err)
		}
	})

	// Which revision each upstream was spoken to in, as the log says.
	out := p.output()
	for server, rev := range map[string]string{"modern": mcp.LATEST_PROTOCOL_VERSION, "legacy": mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "upstream ready") && strings.Contains(line, `"upstream": "`+server+`"`) {
				found = strings.Contains(line, `"protocol": "`+rev+`"`)
				if !found {
					t.Errorf("%s: %s, want protocol %s", server, line, rev)
				}
				break
			}
		}
		if !found {
			t.Errorf("no upstream ready line with protocol %s for %s in:\n%s", rev, server, out)
		}
	}
}

type samplerFunc func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplerFunc) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}

// gosdkText joins the text of a Go SDK content list.
func gosdkText(content []gosdk.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(*gosdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
