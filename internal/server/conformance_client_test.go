package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// The conformance suite's client scenarios test mcproxy as a client of its
// upstreams. The suite starts a scenario server and runs a command with its
// URL appended; that command is this test binary with
// conformanceClientEnv set: it runs mcproxy's upstream manager and front
// (direct mode) with the scenario server as its one upstream, and a real
// mcp-go client of the front does what the scenario asks (through
// mcproxy): initialize, call add_numbers, answer an elicitation with the
// schema's defaults, wait out a stream the server closes.
const conformanceClientEnv = "MCPROXY_TEST_CONFORMANCE_CLIENT"

func init() {
	if os.Getenv(conformanceClientEnv) == "" {
		return
	}
	url := os.Args[len(os.Args)-1]
	if err := conformanceClient(url, os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// conformanceClient is the client side of one scenario run.
func conformanceClient(url, scenario string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	mgr := upstream.New(&config.Config{MCPServers: map[string]config.ServerConfig{"up": {URL: url}}}, upstream.Options{})
	defer mgr.Close()
	front, err := New(Deps{Upstreams: mgr}, Options{Mode: config.ModeDirect})
	if err != nil {
		return err
	}
	mgr.Start(ctx)
	for _, st := range mgr.Status() {
		if st.State != upstream.StateReady {
			return fmt.Errorf("upstream %s is %s: %s", st.Server, st.State, st.LastError)
		}
	}
	front.Resync()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- serveHTTP(sctx, transportOf(front, mcptransport.Options{}), ln, mcptransport.HTTPOptions{})
	}()
	defer func() { stop(); <-served }()

	tr, err := transport.NewStreamableHTTP("http://"+ln.Addr().String()+mcptransport.PathStreamable, transport.WithContinuousListening())
	if err != nil {
		return err
	}
	c := client.NewClient(tr, client.WithElicitationHandler(defaultsElicitor{}))
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		return err
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcproxy-conformance-front", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initializing the front: %w", err)
	}
	call := func(name string, args map[string]any) (string, error) {
		var req mcp.CallToolRequest
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "", fmt.Errorf("calling %s: %w", name, err)
		}
		var b strings.Builder
		for _, ct := range res.Content {
			b.WriteString(textOf(ct))
		}
		if res.IsError {
			return "", fmt.Errorf("%s failed: %s", name, b.String())
		}
		return b.String(), nil
	}
	switch scenario {
	case "initialize":
		return nil
	case "tools_call":
		got, err := call("up__add_numbers", map[string]any{"a": 5, "b": 3})
		if err == nil && !strings.Contains(got, "8") {
			err = fmt.Errorf("add_numbers(5, 3) answered %q", got)
		}
		return err
	case "elicitation-sep1034-client-defaults":
		_, err := call("up__test_client_elicitation_defaults", map[string]any{})
		return err
	case "sse-retry":
		_, err := call("up__test_reconnection", map[string]any{})
		return err
	}
	return fmt.Errorf("scenario %q is not one this client runs", scenario)
}

// defaultsElicitor accepts every form elicitation with the default of each
// property the schema gives one (SEP-1034: the client fills in defaults).
type defaultsElicitor struct{}

func (defaultsElicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	content := map[string]any{}
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if d, ok := p.(map[string]any)["default"]; ok {
			content[name] = d
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

var passedRE = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestConformanceClientScenarios runs the suite's client scenarios that
// apply to mcproxy as a client of its upstreams, through a real front
// client (see conformanceClient). Every check must pass.
func TestConformanceClientScenarios(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: the MCP conformance suite (npm @modelcontextprotocol/conformance) runs on Node 20; install Node and run npm ci to run this test")
	}
	suite := testenv.Conformance(t)
	for _, scenario := range []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, suite[0], append(suite[1:], "client",
				"--command", os.Args[0]+" -test.run=^$",
				"--scenario", scenario, "--timeout", "30000")...)
			cmd.Env = append(os.Environ(), conformanceClientEnv+"=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("running the conformance suite: %v", err)
			}
			m := passedRE.FindSubmatch(out)
			if m == nil {
				t.Fatalf("no result line in the suite's output:\n%s", out)
			}
			if string(m[1]) != string(m[2]) || string(m[3]) != "0" || err != nil {
				t.Errorf("scenario %s: passed %s of %s checks, %s failed (exit: %v):\n%s", scenario, m[1], m[2], m[3], err, out)
			}
		})
	}
}
