package e2e

import (
	"context"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// startReplicas starts n mcproxy replicas sharing one real PostgreSQL
// database (shared; else each keeps its state in its files), each with a
// data directory of its own and one npm reference server in direct mode,
// and waits until each serves tool (server "memory" serves
// "memory__read_graph"). It returns their base URLs and processes.
func startReplicas(t testing.TB, n int, shared bool, server, tool string) ([]string, []*proc) {
	t.Helper()
	if _, err := osexec.LookPath("node"); err != nil {
		t.Skipf("skipping: the memory server needs Node.js, and node is not on PATH (%v)", err)
	}
	if shared {
		t.Setenv("MCPROXY_E2E_PG_DSN", testenv.Postgres(t))
	}
	dir := t.TempDir()
	urls := make([]string, n)
	procs := make([]*proc, n)
	for i := range n {
		cfg := map[string]any{
			"mcpServers":   map[string]any{server: map[string]any{"command": testenv.NodeBin(t, "mcp-server-"+server)}},
			"data_dir":     filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"mode":         "direct",
			"init_timeout": "60s",
		}
		if shared {
			cfg["store"] = map[string]any{"postgres": "${MCPROXY_E2E_PG_DSN}"}
		}
		config := writeConfigFile(t, filepath.Join(dir, fmt.Sprintf("config%d.json", i)), cfg)
		addr := freeAddr(t)
		procs[i] = startProc(t, fmt.Sprintf("replica %d", i), osexec.Command(binary, "serve", "--config", config, "--listen", addr))
		urls[i] = "http://" + addr
	}
	for i, u := range urls {
		waitListening(t, u[len("http://"):], procs[i])
		c := startHTTP(t, u+"/mcp")
		initialize(t, c)
		for deadline := time.Now().Add(time.Minute); !slices.Contains(listTools(t, c), tool); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d serves no %s after a minute\n%s", i, tool, procs[i].output())
			}
		}
		c.Close()
	}
	return urls, procs
}

// An MCP 2025-11-25 session continues on another replica (issue 32): three
// replicas sharing one PostgreSQL behind the test's round-robin proxy (no
// affinity), one mcp-go client that initializes once, then lists tools,
// reads a resource and calls a tool, its requests landing on every
// replica; each is answered within the one session. Then the same with
// the official Go SDK's client.
func TestSessionAcrossReplicas(t *testing.T) {
	needNode(t)
	urls, procs := startReplicas(t, 3, true, "memory", "memory__read_graph")
	lb, rr := newRoundRobin(t, urls)

	c := startHTTP(t, lb.URL+"/mcp")
	initialize(t, c)
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range 3 {
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil || !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "memory__read_graph" }) {
			t.Fatalf("round %d: tools/list on the shared session: %v (%d tools)\n%s", round, err, len(listedTools(tools)), outputs(procs))
		}
		res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil || len(res.Resources) == 0 {
			t.Fatalf("round %d: resources/list on the shared session: %v\n%s", round, err, outputs(procs))
		}
		read := mcp.ReadResourceRequest{}
		read.Params.URI = res.Resources[0].URI
		if got, err := c.ReadResource(ctx, read); err != nil || len(got.Contents) == 0 {
			t.Fatalf("round %d: resources/read %s on the shared session: %v\n%s", round, read.Params.URI, err, outputs(procs))
		}
		call := callTool(t, c, "memory__read_graph", map[string]any{})
		if call.IsError {
			t.Fatalf("round %d: tools/call on the shared session: %s", round, text(call))
		}
	}
	if got := c.GetTransport().(*transport.StreamableHTTP).GetSessionId(); got != id {
		t.Errorf("the session id changed from %s to %s: the client had to initialize again", id, got)
	}
	rr.mu.Lock()
	served := slices.Clone(rr.served)
	rr.mu.Unlock()
	for i, n := range served {
		if n < 3 {
			t.Errorf("replica %d served %d of the session's requests, want several on each: %v", i, n, served)
		}
	}

	// The official Go SDK's client too, with its standalone GET stream
	// (which stays on the replica it reached).
	gc := gosdk.NewClient(&gosdk.Implementation{Name: "go-sdk-replicas", Version: "1.0.0"}, nil)
	cs, err := gc.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: lb.URL + "/mcp"}, &gosdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting the Go SDK client through the proxy: %v\n%s", err, outputs(procs))
	}
	defer cs.Close()
	for round := range 3 {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *gosdk.Tool) bool { return tl.Name == "memory__read_graph" }) {
			t.Fatalf("Go SDK round %d: tools/list: %v\n%s", round, err, outputs(procs))
		}
		res, err := cs.ListResources(ctx, nil)
		if err != nil || len(res.Resources) == 0 {
			t.Fatalf("Go SDK round %d: resources/list: %v", round, err)
		}
		if got, err := cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: res.Resources[0].URI}); err != nil || len(got.Contents) == 0 {
			t.Fatalf("Go SDK round %d: resources/read: %v", round, err)
		}
		call, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "memory__read_graph", Arguments: map[string]any{}})
		if err != nil || call.IsError {
			t.Fatalf("Go SDK round %d: tools/call: %v %v", round, err, call)
		}
	}
	if cs.ID() == "" {
		t.Error("the Go SDK client's session has no id")
	}
}

func listedTools(r *mcp.ListToolsResult) []mcp.Tool {
	if r == nil {
		return nil
	}
	return r.Tools
}

func outputs(procs []*proc) string {
	var s string
	for _, p := range procs {
		s += p.name + ":\n" + p.output() + "\n"
	}
	return s
}

// kill -9 of the replica serving a streamed tools/call mid-stream loses
// nothing once the client retries on another (issue 32's acceptance):
// three replicas sharing one PostgreSQL behind the round-robin proxy; a
// tools/call with progress (the everything server's long-running
// operation) streams its progress from one replica, which is killed with
// SIGKILL after the first progress notification; the client's call fails,
// and its retry in the same session, on the next replica, runs to the end
// with every progress step and the result.
func TestKillMidStreamAcrossReplicas(t *testing.T) {
	needNode(t)
	const tool = "everything__trigger-long-running-operation"
	urls, procs := startReplicas(t, 3, true, "everything", tool)
	lb, rr := newRoundRobin(t, urls)

	c := startHTTP(t, lb.URL+"/mcp")
	initialize(t, c)
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	progress := make(chan float64, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			p, _ := n.Params.AdditionalFields["progress"].(float64)
			progress <- p
		}
	})
	call := func(token string) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = map[string]any{"duration": 3, "steps": 6}
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		return c.CallTool(ctx, req)
	}

	// The proxy sends the call to the replica after the last one used.
	victim := int(rr.next.Load()) % len(procs)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	first := make(chan outcome, 1)
	go func() {
		res, err := call("first")
		first <- outcome{res, err}
	}()
	select {
	case <-progress:
	case o := <-first:
		t.Fatalf("the call ended before any progress: %v %v", o.res, o.err)
	case <-time.After(30 * time.Second):
		t.Fatalf("no progress within 30s\n%s", outputs(procs))
	}
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-procs[victim].done
	if o := <-first; o.err == nil && !o.res.IsError {
		t.Fatalf("the call on the killed replica %d succeeded: %s", victim, text(o.res))
	}
	for len(progress) > 0 {
		<-progress
	}

	res, err := call("retry")
	if err != nil || res.IsError {
		t.Fatalf("the retry on another replica: %v %v\n%s", err, res, outputs(procs))
	}
	if got := upstreamText(res); !strings.Contains(got, "Long running operation completed") {
		t.Errorf("the retry's result: %q, want the operation's completion", got)
	}
	// Progress is delivered beside the result; give the last a moment.
	var steps []float64
	for wait := time.After(5 * time.Second); len(steps) < 6; {
		select {
		case p := <-progress:
			steps = append(steps, p)
			continue
		case <-wait:
		}
		break
	}
	if len(steps) != 6 || steps[5] != 6 {
		t.Errorf("the retry streamed progress %v, want steps 1 to 6", steps)
	}
	if got := c.GetTransport().(*transport.StreamableHTTP).GetSessionId(); got != id {
		t.Errorf("the session id changed from %s to %s: the client had to initialize again", id, got)
	}
}
