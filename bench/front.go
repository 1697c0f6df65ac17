package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// ServerFront is the FrontFactory the profiler uses: the production MCP front
// (internal/server) in retrieve mode over the production ranking (rank),
// with arm a as both its retrieve_tools renderer and its index mapping,
// reached through mcp-go's in-process client. The menu and the answers are
// therefore exactly what an MCP client of mcproxy receives. With dense
// retrieval, it waits for every tool's vector before it answers.
func ServerFront(ctx context.Context, a arms.Arm, tools []config.Tool, rank *retrieval.Pipeline) (Front, error) {
	cat := &catalog{tools: tools}
	srv, err := server.New(server.Deps{Upstreams: cat, Index: rank}, server.Options{
		Render:        server.ArmRenderer(a.EncodeListing),
		IndexMetadata: a.EncodeIndexMetadata,
	})
	if err != nil {
		rank.Close()
		return nil, fmt.Errorf("creating front: %w", err)
	}
	srv.Resync()
	if err := rank.Sync(ctx); err != nil {
		rank.Close()
		return nil, fmt.Errorf("embedding the tools: %w", err)
	}
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		rank.Close()
		return nil, fmt.Errorf("creating in-process client: %w", err)
	}
	f := &serverFront{rank: rank, client: c}
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
	req := mcp.CallToolRequest{}
	req.Params.Name = server.ToolRetrieve
	req.Params.Arguments = map[string]any{"query": query, "limit": limit}
	res, err := f.client.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("retrieve_tools answered with an error: %s", b.String())
	}
	return b.String(), nil
}

func (f *serverFront) Close() error {
	return errors.Join(f.client.Close(), f.rank.Close())
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

func (c *catalog) Call(ctx context.Context, srv, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("%s:%s: a frozen corpus cannot run tools", srv, tool)
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
