package server

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestDirectName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		server, tool string
		want         string
		wantExact    bool
	}{
		{"fs", "read_file", "fs__read_file", true},
		{"git-hub", "list-issues", "git-hub__list-issues", true},
		{"web", "get.weather/now", "web__get_weather_now", false},
		{"web", "café", "web__caf_", false},
		{"web", "a b", "web__a_b", false},
		{"s", long, ("s__" + long)[:55] + "_" + hash8("s:"+long), false},
	}
	for _, tc := range tests {
		t.Run(tc.server+":"+tc.tool, func(t *testing.T) {
			got, exact := DirectName(tc.server, tc.tool)
			if got != tc.want || exact != tc.wantExact {
				t.Errorf("got %q exact %v, want %q exact %v", got, exact, tc.want, tc.wantExact)
			}
			if !validName.MatchString(got) {
				t.Errorf("got %q, want a name matching %s", got, validName)
			}
		})
	}
}

func hash8(id string) string {
	h := withHash("", id)
	return h[1:]
}

func TestDirectNamesCollisions(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want map[string]string
	}{
		{
			name: "no collision",
			ids:  []string{"a:x", "b:x"},
			want: map[string]string{"a:x": "a__x", "b:x": "b__x"},
		},
		{
			name: "exact name keeps it, lossy one gets a hash",
			ids:  []string{"web:get_weather", "web:get.weather"},
			want: map[string]string{"web:get_weather": "web__get_weather", "web:get.weather": "web__get_weather_" + hash8("web:get.weather")},
		},
		{
			name: "two lossy names both get hashes",
			ids:  []string{"web:get.weather", "web:get/weather"},
			want: map[string]string{"web:get.weather": "web__get_weather_" + hash8("web:get.weather"), "web:get/weather": "web__get_weather_" + hash8("web:get/weather")},
		},
		{
			name: "two exact names from the separator both get hashes",
			ids:  []string{"a__b:c", "a:b__c"},
			want: map[string]string{"a__b:c": "a__b__c_" + hash8("a__b:c"), "a:b__c": "a__b__c_" + hash8("a:b__c")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DirectNames(tc.ids)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DirectNames(%v) mismatch (-want +got):\n%s", tc.ids, diff)
			}
			// The answer depends on the set, not its order.
			rev := make([]string, len(tc.ids))
			for i, id := range tc.ids {
				rev[len(rev)-1-i] = id
			}
			if diff := cmp.Diff(got, DirectNames(rev)); diff != "" {
				t.Errorf("DirectNames depends on input order (-fwd +rev):\n%s", diff)
			}
			seen := map[string]bool{}
			for _, n := range got {
				if seen[n] || !validName.MatchString(n) {
					t.Errorf("name %q is duplicated or invalid", n)
				}
				seen[n] = true
			}
		})
	}
}

func TestDirectMode(t *testing.T) {
	upSrv := newUpstreamServer()
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": upSrv})
	f := startFront(t, up, nil, Options{Mode: config.ModeDirect}, mcptransport.HTTPOptions{})

	for _, kind := range []string{"streamable", "sse"} {
		t.Run(kind, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			c := connect(t, f, kind, func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationToolsListChanged) {
					changed <- struct{}{}
				}
			})
			want := []string{"test__add", "test__echo", "test__fail", "test__read_file", "test__sleep"}
			if got := toolNames(t, c); !cmp.Equal(got, want) {
				t.Fatalf("tools/list: got %v, want %v", got, want)
			}
			res := callTool(t, c, "test__echo", map[string]any{"message": "direct"})
			if text(res) != "Echo: direct" {
				t.Errorf("test__echo: got %q, want %q", text(res), "Echo: direct")
			}
			// propagate hands the upstream's new tool set to the front, as
			// the upstream manager would, and waits for the client to be told.
			propagate := func(what string) {
				t.Helper()
				if err := up.refresh(context.Background(), "test"); err != nil {
					t.Fatal(err)
				}
				f.ToolsChanged("test", up.serverTools("test"))
				select {
				case <-changed:
				case <-time.After(5 * time.Second):
					t.Fatalf("got no notifications/tools/list_changed after a tool was %s, want one", what)
				}
			}

			// A new upstream tool appears and clients are told.
			name := "new_" + kind
			upSrv.AddTool(mcp.NewTool(name, mcp.WithDescription("A tool added at run time.")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("new"), nil
				})
			propagate("added")
			got := toolNames(t, c)
			found := false
			for _, n := range got {
				found = found || n == "test__"+name
			}
			if !found {
				t.Errorf("tools/list after change: got %v, want it to include test__%s", got, name)
			}

			// The tool goes away again.
			upSrv.DeleteTools(name)
			propagate("removed")
			if got := toolNames(t, c); !cmp.Equal(got, want) {
				t.Errorf("tools/list after removal: got %v, want %v", got, want)
			}
		})
	}
}

func TestDirectModeKeepsSchemaAndSkipsUnchanged(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, nil, Options{Mode: config.ModeDirect}, mcptransport.HTTPOptions{})
	c := connect(t, f, "inprocess", nil)

	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, tl := range res.Tools {
		if tl.Name == "test__echo" {
			b, _ := tl.InputSchema.MarshalJSON()
			got = string(b)
		}
	}
	want := up.serverTools("test")[1].Schema // sorted: add, echo, ...
	if got != string(want) {
		t.Errorf("test__echo inputSchema: got %s, want the upstream's %s", got, want)
	}

	before := f.direct["test__echo"]
	f.ToolsChanged("test", up.serverTools("test"))
	if after := f.direct["test__echo"]; after != before {
		t.Errorf("unchanged tool was re-registered: got %+v, want %+v", after, before)
	}
}

func TestDirectNamesConfiguredPrefixes(t *testing.T) {
	prefix := func(server string) string {
		switch server {
		case "a", "b":
			return "" // both expose their names as they send them
		case "g":
			return "git_"
		}
		return server + "__"
	}
	rank := func(server string) uint64 { return map[string]uint64{"b": 1, "a": 2}[server] }
	got, held := directNames([]string{"a:echo", "b:echo", "a:add", "g:log", "c:x"}, prefix, rank)
	want := map[string]string{"b:echo": "echo", "a:add": "add", "g:log": "git_log", "c:x": "c__x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
	// b came first, so a's echo is withheld, not renamed.
	wantHeld := []collision{{id: "a:echo", keeper: "b:echo", name: "echo"}}
	if diff := cmp.Diff(wantHeld, held, cmp.AllowUnexported(collision{})); diff != "" {
		t.Errorf("withheld mismatch (-want +got):\n%s", diff)
	}
}
