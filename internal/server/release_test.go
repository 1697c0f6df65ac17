package server

import (
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// forcedGCs is how many garbage collections the program forced so far.
func forcedGCs(t *testing.T) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("runtime/metrics has no %s", s[0].Name)
	}
	return s[0].Value.Uint64()
}

// A call of a megabyte or more has its memory released once it has run (a
// forced collection, release.go); a small one does not. Not parallel: the
// count of forced collections is the process's.
func TestLargeCallReleasesMemory(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	c := connect(t, f, "streamable", nil)
	for _, tc := range []struct {
		name   string
		size   int
		forced bool
	}{{"small", 100, false}, {"a megabyte", releaseMin, true}} {
		msg := strings.Repeat("m", tc.size)
		before := forcedGCs(t)
		res := callTool(t, c, ToolCall, map[string]any{"name": "test:echo", "arguments": map[string]any{"message": msg}})
		if res.IsError || text(res) != "Echo: "+msg {
			t.Fatalf("%s call: got %d bytes (isError %v), want the message echoed", tc.name, len(text(res)), res.IsError)
		}
		if got := forcedGCs(t) > before; got != tc.forced {
			t.Errorf("%s call: a collection forced: %v, want %v", tc.name, got, tc.forced)
		}
	}
}
