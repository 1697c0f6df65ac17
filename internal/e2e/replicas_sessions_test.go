package e2e

import (
	"context"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// startReplicas starts n mcproxy replicas sharing one real PostgreSQL
// database (shared; else each keeps its state in its files), each with a
// data directory of its own and the memory server in direct mode, and
// waits until each serves the memory server's tools. It returns their base
// URLs and processes.
func startReplicas(t testing.TB, n int, shared bool) ([]string, []*proc) {
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
			"mcpServers":   map[string]any{"memory": map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory")}},
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
		for deadline := time.Now().Add(time.Minute); !slices.Contains(listTools(t, c), "memory__read_graph"); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d serves no memory__read_graph after a minute\n%s", i, procs[i].output())
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
// replica; each is answered within the one session.
func TestSessionAcrossReplicas(t *testing.T) {
	needNode(t)
	urls, procs := startReplicas(t, 3, true)
	lb, rr := newRoundRobin(t, urls)

	c := startHTTP(t, lb.URL+"/mcp")
	initialize(t, c)
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range 3 {
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil || !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "memory__read_graph" }) {
			t.Fatalf("round %d: tools/list on the shared session: %v (%d tools)\n%s", round, err, len(toolsOf(tools)), outputs(procs))
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
}

func toolsOf(r *mcp.ListToolsResult) []mcp.Tool {
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
