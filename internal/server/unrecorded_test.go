package server

import (
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// fullDisk is the real file system whose transcript writes fail with
// ENOSPC while full is set (internal/e2e's TestNoaFullDisk fills a real
// tmpfs; this one picks which write fails).
type fullDisk struct {
	session.OS
	full atomic.Bool
}

func (f *fullDisk) OpenLog(path string) (session.LogFile, error) {
	l, err := f.OS.OpenLog(path)
	if err != nil {
		return nil, err
	}
	return fullLog{l, f}, nil
}

type fullLog struct {
	session.LogFile
	fs *fullDisk
}

func (l fullLog) WriteAt(p []byte, off int64) (int, error) {
	if l.fs.full.Load() {
		return 0, &os.PathError{Op: "write", Path: l.Name(), Err: syscall.ENOSPC}
	}
	return l.LogFile.WriteAt(p, off)
}

// lastBlock is the text of a result's last content block.
func lastBlock(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[len(res.Content)-1].(mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// refTagOf is the ref of a result's ref tag, or "".
func refTagOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok && refTag.MatchString(tc.Text) {
			return strings.Fields(strings.TrimPrefix(tc.Text, "["))[0]
		}
	}
	return ""
}

// Calls whose records cannot be written, by noa.on_record_error: an
// upstream call is refused ("refuse") or answered with the note
// ("report"); retrieve_tools and read_archive, which read mcproxy's own
// catalogue and archives, always run and carry the note. Once the
// transcript can be written again, calls are recorded and tagged as before.
func TestUnrecordedCalls(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		name := map[bool]string{false: "report", true: "refuse"}[refuse]
		t.Run(name, func(t *testing.T) {
			fs := &fullDisk{}
			m := session.NewManager(session.Options{Dir: t.TempDir(), Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000, FS: fs, RefuseUnrecorded: refuse})
			t.Cleanup(func() { m.Close() })
			up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
			s, err := New(Deps{Upstreams: up, Index: newWordIndex(), Sessions: m}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := connect(t, serveFront(t, s, mcptransport.HTTPOptions{}), "streamable", nil)
			echo := map[string]any{"name": "test:echo", "arguments": map[string]any{"message": "hi"}}
			first := callTool(t, c, ToolCall, echo)
			ref := refTagOf(first)
			if ref == "" {
				t.Fatalf("the first call: got %q, want a ref tag", text(first))
			}

			fs.full.Store(true)
			res := callTool(t, c, ToolCall, echo)
			if refuse {
				if !res.IsError || !strings.Contains(text(res), "refused before it ran") || strings.Contains(text(res), "Echo: hi") {
					t.Errorf("call_tool on a full disk with refuse: got %q (isError %v), want the refusal and no result", text(res), res.IsError)
				}
			} else if res.IsError || !strings.HasPrefix(text(res), "Echo: hi\n") || !strings.Contains(lastBlock(res), "could not record it (no space left on device)") {
				t.Errorf("call_tool on a full disk: got %q, want the result and the note", text(res))
			}
			for _, k := range []struct {
				tool, want string
				args       map[string]any
			}{
				{ToolRetrieve, "test:echo", map[string]any{"query": "echo a message"}},
				{session.ReadArchiveToolName, "Echo: hi", map[string]any{"ref": ref}},
			} {
				res := callTool(t, c, k.tool, k.args)
				if res.IsError || !strings.Contains(text(res), k.want) || !strings.Contains(lastBlock(res), "could not record it (no space left on device)") {
					t.Errorf("%s on a full disk: got %q (isError %v), want its answer and the note", k.tool, text(res), res.IsError)
				}
			}

			fs.full.Store(false)
			res = callTool(t, c, ToolCall, echo)
			if res.IsError || refTagOf(res) == "" || strings.Contains(text(res), "[mcproxy]") {
				t.Errorf("call_tool with room again: got %q, want the result with its ref tag and no note", text(res))
			}
		})
	}
}
