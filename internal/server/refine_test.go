package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
)

func TestRetrieveRefineHelp(t *testing.T) {
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The production ranking, whose weak-match judgement decides when the
	// server list is added.
	p, err := retrieval.New(ix, nil, retrieval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"alpha": newUpstreamServer(), "beta": newUpstreamServer()})
	f := startFront(t, up, p, Options{}, mcptransport.HTTPOptions{})
	c := connect(t, f, "inprocess", nil)
	const list = "Connected servers"
	const alphaLine = "- alpha (5 tools): add, echo, fail, read_file, sleep"

	tests := []struct {
		name, query string
		want        []string // substrings, in order
		wantNoList  bool
	}{
		{"no match", "zebra", []string{`No tools match "zebra"`, list, alphaLine, "- beta (5 tools): add, echo, fail, read_file, sleep"}, false},
		{"weak match", "echo quantum zebra lattice spectroscopy", []string{"share little wording", "echo", list, alphaLine}, false},
		{"good match", "echo a message back unchanged", []string{"echo"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, c, ToolRetrieve, map[string]any{"query": tc.query})
			got := text(res)
			if res.IsError {
				t.Fatalf("got tool error %q", got)
			}
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("got %q, want it to contain %q (after the earlier parts)", got, w)
				}
				rest = rest[i+len(w):]
			}
			if tc.wantNoList && strings.Contains(got, list) {
				t.Errorf("got %q, want no server list for a good match", got)
			}
		})
	}
}

func TestServerDirectoryCaps(t *testing.T) {
	s := &Server{byID: map[string]config.Tool{}}
	if got := s.serverDirectory(); got != "" {
		t.Errorf("empty catalog: got %q, want nothing", got)
	}
	long := strings.Repeat("x", 40)
	for i := range maxDirectoryServers + 5 {
		srv := fmt.Sprintf("s%03d", i)
		for j := range 5 {
			name := fmt.Sprintf("%s_%d", long, j)
			s.byID[srv+":"+name] = config.Tool{ID: srv + ":" + name, Server: srv, Name: name}
		}
	}
	got := s.serverDirectory()
	lines := strings.Split(got, "\n")
	if len(lines) != 1+maxDirectoryServers+1 {
		t.Fatalf("got %d lines, want a header, %d servers and a remainder line", len(lines), maxDirectoryServers)
	}
	if last := lines[len(lines)-1]; last != "- ... and 5 more servers" {
		t.Errorf("got last line %q, want the count of servers left out", last)
	}
	for _, l := range lines[1 : len(lines)-1] {
		if len(l) > maxDirectoryLine+4 {
			t.Errorf("got a %d-byte line %q, want at most about %d", len(l), l, maxDirectoryLine)
		}
		if !strings.HasSuffix(l, "...") {
			t.Errorf("got line %q, want the tool names cut with ...", l)
		}
	}
}
