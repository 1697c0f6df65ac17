package server

import (
	"context"
	"runtime/debug"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// After a call that carried a megabyte or more (its arguments or its
// result), the memory it used is handed back to the system before the call
// is answered. A 5 MB write_file is copied a few times on its way (the
// client's line, the decoded arguments, the transcript's text, the request
// to the upstream), so the heap grows by several times its size; the Go
// runtime then keeps the freed pages until later collections shrink its
// goal, which an idle proxy does not run: after five such calls mcproxy
// stayed at more than twice its resident memory at rest (issue 28). A
// forced collection costs such a call about as much as a few of its
// copies (measured in docs/benchmarks.md) and nothing to smaller ones.

// releaseMin is the size of a call, in bytes of its arguments' JSON or its
// result's content, from which its memory is released.
const releaseMin = 1 << 20

// releaseMemory is the tool handler middleware that releases a large
// call's memory (see above) once it has run. One release runs at a time;
// a call finishing meanwhile leaves its memory to the next.
func (s *Server) releaseMemory(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		if (len(req.Params.RawArguments) >= releaseMin || resultBytes(res) >= releaseMin) && s.releasing.CompareAndSwap(false, true) {
			debug.FreeOSMemory()
			s.releasing.Store(false)
		}
		return res, err
	}
}

// resultBytes is the size of res's content: its texts and the data of its
// images and audio, stopping at releaseMin.
func resultBytes(res *mcp.CallToolResult) int {
	if res == nil {
		return 0
	}
	n := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			n += len(c.Text)
		case *mcp.TextContent:
			n += len(c.Text)
		case mcp.ImageContent:
			n += len(c.Data)
		case *mcp.ImageContent:
			n += len(c.Data)
		case mcp.AudioContent:
			n += len(c.Data)
		case *mcp.AudioContent:
			n += len(c.Data)
		}
		if n >= releaseMin {
			break
		}
	}
	return n
}
