// Command oauthclient is the conformance suite's "client under test" for
// mcproxy's OAuth tests, and the browser those tests hand mcproxy.
//
//	oauthclient open URL      follows URL and its redirects, as a browser
//	                          whose user is already signed in would (set
//	                          BROWSER="oauthclient open" for mcproxy)
//	oauthclient SERVER_URL    configures mcproxy with SERVER_URL as its only
//	                          upstream, starts `mcproxy serve --stdio` (the
//	                          binary in $MCPROXY_BIN), and as a real MCP client
//	                          searches for the server's tool and calls it
//	                          through the front, as a user's agent would
//
// The conformance suite runs it with MCP_CONFORMANCE_SCENARIO and, for
// scenarios with credentials, MCP_CONFORMANCE_CONTEXT set; those become the
// oauth block a user would write for such a server.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
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
	oauth := map[string]any{
		// The suite's metadata document URL, as its own reference client
		// uses; servers that do not support such documents get dynamic
		// registration.
		"client_metadata_url": "https://conformance-test.local/client-metadata.json",
		"login_timeout":       "20s",
	}
	if cctx.ClientID != "" {
		oauth["client_id"] = cctx.ClientID
	}
	if cctx.ClientSecret != "" {
		oauth["client_secret"] = cctx.ClientSecret
	}
	if cctx.PrivateKeyPEM != "" {
		oauth["private_key"] = cctx.PrivateKeyPEM
		oauth["token_endpoint_auth_method"] = "private_key_jwt"
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		oauth["grant"] = "client_credentials"
	}
	dir, err := os.MkdirTemp("", "oauthclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := map[string]any{
		"mcpServers":   map[string]any{"conf": map[string]any{"url": serverURL, "oauth": oauth}},
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
	c, err := client.NewStdioMCPClient(bin, env, "serve", "--stdio", "--config", cfgPath, "--log-level", "debug")
	if err != nil {
		return err
	}
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

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
