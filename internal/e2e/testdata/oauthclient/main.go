// Command oauthclient is the conformance suite's "client under test" for
// mcproxy as a client of its upstreams (the authorization scenarios and,
// for the 2026-07-28 suite, the others), and the browser those tests hand
// mcproxy.
//
//	oauthclient open URL      follows URL and its redirects, as a browser
//	                          whose user is already signed in would (set
//	                          BROWSER="oauthclient open" for mcproxy)
//	oauthclient SERVER_URL    configures mcproxy with SERVER_URL as its only
//	                          upstream, starts `mcproxy serve --stdio` (the
//	                          binary in $MCPROXY_BIN), and as a real MCP client
//	                          searches for the server's tool and calls it
//	                          through the front, as a user's agent would;
//	                          for a scenario outside auth/, mcproxy runs in
//	                          direct mode with the server's names kept, and
//	                          the client does what the scenario asks through
//	                          the front (see scenarioCalls)
//
// The conformance suite runs it with MCP_CONFORMANCE_SCENARIO and, for
// scenarios with credentials, MCP_CONFORMANCE_CONTEXT set; those become the
// oauth block a user would write for such a server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "open" {
		if err := open(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "oauthclient open:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: oauthclient open URL | oauthclient SERVER_URL")
		os.Exit(2)
	}
	if err := drive(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "oauthclient:", err)
		os.Exit(1)
	}
}

// open fetches u following redirects; the last hop is mcproxy's loopback
// redirect listener.
func open(u string) error {
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", resp.Request.URL, resp.StatusCode, body)
	}
	return nil
}

func drive(serverURL string) error {
	bin := os.Getenv("MCPROXY_BIN")
	if bin == "" {
		return fmt.Errorf("MCPROXY_BIN is not set")
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cctx struct {
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		PrivateKeyPEM string `json:"private_key_pem"`
	}
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cctx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	server := map[string]any{"url": serverURL}
	mode := "retrieve"
	if strings.HasPrefix(scenario, "auth/") {
		server["oauth"] = oauthBlock(scenario, cctx.ClientID, cctx.ClientSecret, cctx.PrivateKeyPEM)
	} else {
		// The scenarios outside auth/ check what mcproxy sends for the
		// tools it exposes: direct mode, names kept.
		mode = "direct"
		server["prefix"] = ""
	}
	// noa's own tools (Compress, read_archive) would be called too.
	noa := map[string]any{"enabled": mode != "direct"}
	dir, err := os.MkdirTemp("", "oauthclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := map[string]any{
		"mcpServers":   map[string]any{"conf": server},
		"mode":         mode,
		"noa":          noa,
		"data_dir":     dir,
		"init_timeout": "20s",
	}
	data, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "BROWSER="+self+" open")
	tr := transport.NewStdio(bin, env, "serve", "--stdio", "--config", cfgPath, "--log-level", "debug")
	if err := tr.Start(context.Background()); err != nil {
		return err
	}
	c := client.NewClient(tr, client.WithElicitationHandler(defaultsElicitor{}))
	defer c.Close()
	if stderr, ok := client.GetStderr(c); ok {
		go func() { _, _ = io.Copy(os.Stderr, stderr) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "oauthclient", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if mode == "direct" {
		return runDirect(ctx, c, scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	}
	var search mcp.CallToolRequest
	search.Params.Name = "retrieve_tools"
	search.Params.Arguments = map[string]any{"query": "test tool"}
	res, err := c.CallTool(ctx, search)
	if err != nil {
		return fmt.Errorf("retrieve_tools: %w", err)
	}
	fmt.Println("retrieve_tools:", textOf(res))
	var call mcp.CallToolRequest
	call.Params.Name = "call_tool"
	call.Params.Arguments = map[string]any{"name": "conf:test-tool", "arguments": map[string]any{}}
	res, err = c.CallTool(ctx, call)
	if err != nil {
		return fmt.Errorf("call_tool: %w", err)
	}
	fmt.Println("call_tool:", textOf(res))
	if res.IsError {
		return fmt.Errorf("call_tool failed: %s", textOf(res))
	}
	return nil
}

// oauthBlock is the oauth block a user would write for a scenario's
// server, given the credentials the suite hands out for it.
func oauthBlock(scenario, clientID, clientSecret, privateKeyPEM string) map[string]any {
	oauth := map[string]any{
		// The suite's metadata document URL, as its own reference client
		// uses; servers that do not support such documents get dynamic
		// registration.
		"client_metadata_url": "https://conformance-test.local/client-metadata.json",
		"login_timeout":       "20s",
	}
	if clientID != "" {
		oauth["client_id"] = clientID
	}
	if clientSecret != "" {
		oauth["client_secret"] = clientSecret
	}
	if privateKeyPEM != "" {
		oauth["private_key"] = privateKeyPEM
		oauth["token_endpoint_auth_method"] = "private_key_jwt"
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		oauth["grant"] = "client_credentials"
	}
	return oauth
}

// runDirect does what a scenario outside auth/ asks, through mcproxy's
// front in direct mode: it lists the tools mcproxy exposes and calls the
// ones the scenario's context names with their arguments or, without
// such a context, every exposed tool with arguments its schema accepts
// (so a tool mcproxy should have refused shows up as called); then it
// lists and fetches one prompt and one resource, so every method's
// headers are exercised.
func runDirect(ctx context.Context, c *client.Client, scenario, rawContext string) error {
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Println("tools:", names)
	var sc struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	call := func(name string, args map[string]any) error {
		var req mcp.CallToolRequest
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return fmt.Errorf("calling %s: %w", name, err)
		}
		fmt.Printf("%s: %s\n", name, textOf(res))
		return nil
	}
	var errs []error
	switch {
	case scenario == "json-schema-ref-no-deref":
		// Listing is the scenario: the canary $ref must not be fetched.
	case len(sc.ToolCalls) > 0:
		for _, tc := range sc.ToolCalls {
			errs = append(errs, call(tc.Name, tc.Arguments))
		}
	default:
		for _, t := range tools.Tools {
			errs = append(errs, call(t.Name, sampleArguments(t)))
		}
	}
	if prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil && len(prompts.Prompts) > 0 {
		var req mcp.GetPromptRequest
		req.Params.Name = prompts.Prompts[0].Name
		_, err := c.GetPrompt(ctx, req)
		errs = append(errs, err)
	}
	if resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); err == nil && len(resources.Resources) > 0 {
		var req mcp.ReadResourceRequest
		req.Params.URI = resources.Resources[0].URI
		_, err := c.ReadResource(ctx, req)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sampleArguments fills each property of t's input schema with a value
// of its type: the numbers 2 and 3 for the first two numeric ones (the
// tools_call scenario's add_numbers), a word for strings.
func sampleArguments(t mcp.Tool) map[string]any {
	raw, _ := json.Marshal(t.InputSchema)
	if len(t.RawInputSchema) > 0 {
		raw = t.RawInputSchema
	}
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &schema)
	args := map[string]any{}
	n := 2
	for _, name := range slices.Sorted(maps.Keys(schema.Properties)) {
		switch typ, _ := schema.Properties[name].Type.(string); typ {
		case "number", "integer":
			args[name] = n
			n++
		case "boolean":
			args[name] = true
		case "object":
			args[name] = map[string]any{}
		case "array":
			args[name] = []any{}
		case "null":
			args[name] = nil
		default:
			args[name] = "us-west1"
		}
	}
	return args
}

// defaultsElicitor accepts every form elicitation with the default of each
// property that has one (SEP-1034), and a word for the other strings.
type defaultsElicitor struct{}

func (defaultsElicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	content := map[string]any{}
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		prop, _ := p.(map[string]any)
		if d, ok := prop["default"]; ok {
			content[name] = d
		} else if prop["type"] == "string" {
			content[name] = "conformance"
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
