package upstream

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestBackoff(t *testing.T) {
	const min, max = time.Second, 30 * time.Second
	cases := []struct {
		failures int
		jitter   float64
		want     time.Duration
	}{
		{0, 0, time.Second},
		{0, 0.999, time.Second + 249750*time.Microsecond},
		{1, 0, 2 * time.Second},
		{2, 0.5, 4*time.Second + 500*time.Millisecond},
		{4, 0, 16 * time.Second},
		{4, 0.999, 19996 * time.Millisecond},
		{5, 0.999, 30 * time.Second}, // 32s plus jitter is capped
		{5, 0, 30 * time.Second},
		{60, 0.5, 30 * time.Second}, // no overflow after many failures
	}
	for _, tc := range cases {
		if got := backoff(tc.failures, min, max, tc.jitter); got != tc.want {
			t.Errorf("backoff(%d, jitter %v): got %s, want %s", tc.failures, tc.jitter, got, tc.want)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	base := []string{"A=1", "B=2", "PATH=/bin"}
	got := mergeEnv(base, map[string]string{"B": "two", "C": "3"})
	want := []string{"A=1", "PATH=/bin", "B=two", "C=3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A=1", "B=2", "PATH=/bin"}, base); diff != "" {
		t.Errorf("base was modified (-want +got):\n%s", diff)
	}
}

func TestChildEnv(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "XDG_CONFIG_HOME=/c", "GITHUB_TOKEN=t", "AWS_PROFILE=p", "PATHX=1"}
	orig := slices.Clone(base)
	tests := []struct {
		name string
		s    config.ServerConfig
		want []string
	}{
		{"minimal", config.ServerConfig{}, []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "XDG_CONFIG_HOME=/c"}},
		{"env on top", config.ServerConfig{Env: map[string]string{"HOME": "/other", "K": "v"}},
			[]string{"PATH=/bin", "LC_ALL=C", "XDG_CONFIG_HOME=/c", "HOME=/other", "K=v"}},
		{"listed names", config.ServerConfig{InheritEnv: config.InheritEnv{Names: []string{"AWS_PROFILE", "UNSET"}}},
			[]string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "XDG_CONFIG_HOME=/c", "AWS_PROFILE=p"}},
		{"all", config.ServerConfig{InheritEnv: config.InheritEnv{All: true}}, base},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, childEnv(base, tc.s)); diff != "" {
				t.Errorf("child env (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(orig, base); diff != "" {
		t.Errorf("base was modified (-want +got):\n%s", diff)
	}
}

func TestToolFromMCP(t *testing.T) {
	raw := mcp.NewToolWithRawSchema("q", "Query.", []byte(`{"type":"object","properties":{"b":{},"a":{}}}`))
	got := ToolFromMCP("db", raw)
	want := config.Tool{ID: "db:q", Server: "db", Name: "q", Description: "Query.",
		Schema: []byte(`{"type":"object","properties":{"b":{},"a":{}}}`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("raw schema tool (-want +got):\n%s", diff)
	}
	got.Schema[0] = 'X'
	if raw.RawInputSchema[0] != '{' {
		t.Error("ToolFromMCP shares the schema bytes with its input")
	}

	built := mcp.NewTool("add", mcp.WithDescription("Add."), mcp.WithNumber("x", mcp.Required()))
	if got := string(ToolFromMCP("calc", built).Schema); got != `{"properties":{"x":{"type":"number"}},"required":["x"],"type":"object"}` {
		t.Errorf("got built schema %s", got)
	}

	if got := ToolFromMCP("x", mcp.Tool{Name: "bare"}).Schema; got != nil {
		t.Errorf("got schema %s for a tool without one, want nil", got)
	}
}
