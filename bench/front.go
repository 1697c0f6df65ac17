package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// ServerFront is the FrontFactory the profiler uses: the production MCP front
// (internal/server) in retrieve mode over the production ranking (rank),
// with arm a as its retrieve_tools renderer, the index on the tools' full
// metadata (as mcproxy serves it, whatever the arm), noa's sessions when
// o.Noa is set (in a temporary directory removed at Close), reached through
// mcp-go's in-process client. The menu and the answers are therefore
// exactly what an MCP client of mcproxy receives. With dense retrieval, it
// waits for every tool's vector before it answers.
func ServerFront(ctx context.Context, a arms.Arm, tools []config.Tool, rank *retrieval.Pipeline, o FrontOptions) (Front, error) {
	cat := &catalog{tools: tools}
	f := &serverFront{rank: rank}
	deps := server.Deps{Upstreams: cat, Index: rank}
	if o.Noa {
		dir, err := os.MkdirTemp("", "mcproxy-bench-sessions-")
		if err != nil {
			rank.Close()
			return nil, fmt.Errorf("creating the sessions directory: %w", err)
		}
		f.dir = dir
		limit := o.ContextLimit
		if limit <= 0 {
			limit = SessionContextLimit
		}
		f.sessions = session.NewManager(session.Options{Dir: dir, Noa: noa.DefaultConfig(limit), Count: o.Count})
		deps.Sessions = f.sessions
	}
	srv, err := server.New(deps, server.Options{
		Render:         server.ArmRenderer(a.EncodeListing),
		IndexMetadata:  arms.BaselineMetadata,
		StdioSessionID: "bench",
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("creating front: %w", err)
	}
	srv.Resync()
	if err := rank.Sync(ctx); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedding the tools: %w", err)
	}
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("creating in-process client: %w", err)
	}
	f.client = c
	if err := c.Start(ctx); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting in-process client: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcproxy-bench", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("initializing: %w", err)
	}
	f.instructions = res.Instructions
	return f, nil
}

type serverFront struct {
	rank         *retrieval.Pipeline
	client       *client.Client
	sessions     *session.Manager
	dir          string
	instructions string
}

func (f *serverFront) Menu(ctx context.Context) ([]config.Tool, string, error) {
	res, err := f.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, "", err
	}
	out := make([]config.Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		// The schema exactly as a client receives it on the wire.
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, "", fmt.Errorf("encoding tool %s: %w", t.Name, err)
		}
		var wire struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(raw, &wire); err != nil {
			return nil, "", fmt.Errorf("decoding tool %s: %w", t.Name, err)
		}
		out = append(out, config.Tool{Name: t.Name, Description: t.Description, Schema: wire.InputSchema})
	}
	return out, f.instructions, nil
}

func (f *serverFront) Retrieve(ctx context.Context, query string, limit int) (string, error) {
	blocks, err := f.call(ctx, server.ToolRetrieve, map[string]any{"query": query, "limit": limit})
	return strings.Join(blocks, ""), err
}

func (f *serverFront) Describe(ctx context.Context, id string) (string, error) {
	blocks, err := f.call(ctx, server.ToolDescribe, map[string]any{"names": []string{id}})
	return strings.Join(blocks, ""), err
}

func (f *serverFront) Call(ctx context.Context, id string) ([]string, error) {
	return f.call(ctx, server.ToolCall, map[string]any{"name": id, "arguments": map[string]any{}})
}

// call runs one tool and returns its text blocks; an error result is an
// error.
func (f *serverFront) call(ctx context.Context, tool string, args map[string]any) ([]string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := f.client.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("%s answered with an error: %s", tool, strings.Join(out, ""))
	}
	return out, nil
}

func (f *serverFront) Close() error {
	var errs []error
	if f.client != nil {
		errs = append(errs, f.client.Close())
	}
	errs = append(errs, f.rank.Close())
	if f.sessions != nil {
		errs = append(errs, f.sessions.Close())
	}
	if f.dir != "" {
		errs = append(errs, os.RemoveAll(f.dir))
	}
	return errors.Join(errs...)
}

// catalog serves a frozen corpus as the front's upstreams: every server is
// ready and every tool is listed, but nothing can be called.
type catalog struct{ tools []config.Tool }

func (c *catalog) Tools() []config.Tool { return c.tools }

func (c *catalog) MCPTool(srv, name string) (mcp.Tool, bool) {
	for _, t := range c.tools {
		if t.Server == srv && t.Name == name {
			return mcp.Tool{Name: t.Name, Description: t.Description, RawInputSchema: t.Schema}, true
		}
	}
	return mcp.Tool{}, false
}

// Call answers every call with ScriptedResult: a frozen corpus cannot run
// its tools, and the session measurement needs results of a known size.
func (c *catalog) Call(ctx context.Context, srv, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(ScriptedResult(config.ToolID(srv, tool))), nil
}

func (c *catalog) Status() []upstream.Status {
	counts := map[string]int{}
	var names []string
	for _, t := range c.tools {
		if counts[t.Server] == 0 {
			names = append(names, t.Server)
		}
		counts[t.Server]++
	}
	out := make([]upstream.Status, 0, len(names))
	for _, n := range names {
		out = append(out, upstream.Status{Server: n, Transport: "corpus", State: upstream.StateReady, Tools: counts[n]})
	}
	return out
}
