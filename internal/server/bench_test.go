package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/testenv/corpora"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// BenchmarkRetrieveTools measures a retrieve_tools call (MCP request
// through an in-process client, Bleve BM25 search, catalog lookup,
// compact_sig rendering) at the LiveMCPTool corpus size (527 tools) and at
// 10,000 tools, against the bare index search for the same queries in the
// same run. It reports both latencies and their ratio; nothing is asserted
// about time.
//
//	go test -run '^$' -bench RetrieveTools -benchtime 2000x ./internal/server
func BenchmarkRetrieveTools(b *testing.B) {
	base := corpora.LiveMCPTools(b)
	queries := testenv.QueryTexts(b, "livemcptool.queries.json")
	arm, err := arms.Resolve(config.DefaultArm)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{527, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			tools := synthesize(base, n)
			ix, err := index.New(index.Options{})
			if err != nil {
				b.Fatal(err)
			}
			p, err := retrieval.New(ix, nil, retrieval.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			s, err := New(Deps{Upstreams: catalogUpstreams(tools), Index: p}, Options{
				Render:        ArmRenderer(arm.EncodeListing),
				IndexMetadata: arm.EncodeIndexMetadata,
			})
			if err != nil {
				b.Fatal(err)
			}
			build := time.Now()
			s.Resync()
			resync := time.Since(build)

			c, err := client.NewInProcessClient(s.MCP())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
			if _, err := c.Initialize(ctx, init); err != nil {
				b.Fatal(err)
			}

			var searchTotal, retrieveTotal time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := queries[i%len(queries)]
				start := time.Now()
				if _, err := ix.Search(ctx, q, config.DefaultRetrieveLimit); err != nil {
					b.Fatal(err)
				}
				searchTotal += time.Since(start)

				req := mcp.CallToolRequest{}
				req.Params.Name = ToolRetrieve
				req.Params.Arguments = map[string]any{"query": q}
				start = time.Now()
				res, err := c.CallTool(ctx, req)
				retrieveTotal += time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("retrieve_tools %q: %v %+v", q, err, res)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(searchTotal.Nanoseconds())/float64(b.N), "search-ns/op")
			b.ReportMetric(float64(retrieveTotal.Nanoseconds())/float64(b.N), "retrieve_tools-ns/op")
			b.ReportMetric(float64(retrieveTotal)/float64(searchTotal), "retrieve/search")
			// Indexing the whole catalog once (arm metadata + Bleve batches).
			b.ReportMetric(float64(resync.Milliseconds()), "resync-ms")
		})
	}
}

// catalogUpstreams serves a fixed tool list; the benchmark never calls a tool.
type catalogUpstreams []config.Tool

func (u catalogUpstreams) Tools() []config.Tool                    { return u }
func (u catalogUpstreams) MCPTool(string, string) (mcp.Tool, bool) { return mcp.Tool{}, false }
func (u catalogUpstreams) Status() []upstream.Status               { return nil }
func (u catalogUpstreams) Call(context.Context, string, string, map[string]any) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("benchmark catalog: calls are not supported")
}

// synthesize grows base to n tools: copy k of a tool lives on server
// "<server>-<k>" with a varied name and description, so the vocabulary grows
// the way a large installation's would.
func synthesize(base []config.Tool, n int) []config.Tool {
	out := make([]config.Tool, 0, n)
	for k := 0; len(out) < n; k++ {
		for _, t := range base {
			if len(out) == n {
				break
			}
			if k > 0 {
				t.Server = fmt.Sprintf("%s-%d", t.Server, k)
				t.Name = fmt.Sprintf("%s_v%d", t.Name, k)
				t.ID = config.ToolID(t.Server, t.Name)
				t.Description = fmt.Sprintf("%s (variant %d, region r%d, edition e%d)", t.Description, k, k%7, k%13)
			}
			out = append(out, t)
		}
	}
	return out
}
