package retrieval

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/testenv/corpora"
)

var smallTools = []config.ToolMetadata{
	{ServerName: "fs", Name: "read_text_file", Description: "Read the complete contents of a file as text."},
	{ServerName: "fs", Name: "write_file", Description: "Create or overwrite a file with new content."},
	{ServerName: "fs", Name: "list_directory", Description: "List the entries of a directory."},
	{ServerName: "clock", Name: "now", Description: "Current time in a time zone."},
}

func newIndex(t testing.TB) *index.Index {
	t.Helper()
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// newDense starts our loopback embeddings server and a Dense over it.
func newDense(t testing.TB) (*embed.Dense, *embedtest.Server) {
	t.Helper()
	srv := embedtest.New(embedtest.Options{})
	t.Cleanup(srv.Close)
	client, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return embed.New(client, embed.Options{}), srv
}

func newPipeline(t testing.TB, dense *embed.Dense, opts Options) *Pipeline {
	t.Helper()
	p, err := New(newIndex(t), dense, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func upsertAll(t testing.TB, p *Pipeline, tools []config.ToolMetadata) {
	t.Helper()
	byServer := map[string][]config.ToolMetadata{}
	var servers []string
	for _, tl := range tools {
		if _, ok := byServer[tl.ServerName]; !ok {
			servers = append(servers, tl.ServerName)
		}
		byServer[tl.ServerName] = append(byServer[tl.ServerName], tl)
	}
	for _, s := range servers {
		if err := p.Upsert(s, byServer[s]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Sync(context.Background()); err != nil {
		t.Fatalf("embedding the tools: %v", err)
	}
}

func ids(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// TestDense runs the pipeline with dense retrieval against a real
// (loopback) embeddings server: fused answers while it works, the lexical
// answer with the provider's error when it fails, and weakness judged on the
// wording.
func TestDense(t *testing.T) {
	ctx := context.Background()
	lexical := newPipeline(t, nil, Options{})
	upsertAll(t, lexical, smallTools)
	dense, srv := newDense(t)
	hybrid := newPipeline(t, dense, Options{})
	upsertAll(t, hybrid, smallTools)

	got, err := hybrid.Search(ctx, "read the contents of a file", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Hits) != 2 || got.DenseErr != nil {
		t.Fatalf("got %v (dense error %v), want 2 hits (the limit) and dense retrieval taking part", ids(got.Hits), got.DenseErr)
	}
	if srv.Requests() == 0 {
		t.Fatal("the embeddings server was never asked: dense retrieval did not run")
	}
	if got.Weak {
		t.Errorf("got %+v, want a strong answer for a query in the tools' own words", got)
	}

	weak, err := hybrid.Search(ctx, "quantum spectroscopy lattice file", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(weak.Hits) == 0 || !weak.Weak {
		t.Errorf("got %+v, want hits marked weak: the query shares little wording with any tool", weak)
	}

	// A failing provider never fails a search: the answer is the lexical
	// one, and DenseErr says why.
	srv.SetFault(embedtest.Status500)
	const q = "write new content to a file"
	want, err := lexical.Search(ctx, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, err = hybrid.Search(ctx, q+" ", 3) // a new query text: not in the query-vector cache
	if err != nil {
		t.Fatalf("search with the provider down: %v", err)
	}
	if diff := cmp.Diff(ids(want.Hits), ids(got.Hits)); diff != "" {
		t.Errorf("provider down: hits differ from lexical search (-lexical +got):\n%s", diff)
	}
	if got.DenseErr == nil {
		t.Error("provider down: DenseErr is nil, want the provider's failure")
	}
}

func TestLexicalLimitAndRemove(t *testing.T) {
	p := newPipeline(t, nil, Options{})
	upsertAll(t, p, smallTools)
	got, err := p.Search(context.Background(), "file directory time", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Hits) != 2 {
		t.Errorf("got %v, want 2 hits", ids(got.Hits))
	}
	if err := p.Remove("fs"); err != nil {
		t.Fatal(err)
	}
	got, _ = p.Search(context.Background(), "file", 5)
	if len(got.Hits) != 0 || !got.Weak {
		t.Errorf("after removing fs: got %v (weak %v), want no hits, weak", ids(got.Hits), got.Weak)
	}
}

func TestNewNeeds(t *testing.T) {
	if _, err := New(nil, nil, Options{}); err == nil {
		t.Error("New without an index: got no error")
	}
	ix := newIndex(t)
	defer ix.Close()
	if _, err := New(ix, nil, Options{DenseOnly: true}); err == nil {
		t.Error("New dense-only without a provider: got no error")
	}
}

// TestPrefixStable checks what makes the profiler's figures the production
// ranking: on the LiveMCPTool corpus (527 tools, with deprecated tools and
// server names to mention), the ranking at each limit retrieve_tools may
// use is the start of the whole ranking the profiler scores, for every
// query of the set, with BM25 alone and fused with dense retrieval.
func TestPrefixStable(t *testing.T) {
	tools := corpora.LiveMCPTools(t)
	metas := corpora.Metadata(tools)
	queries := testenv.QueryTexts(t, "livemcptool.queries.json")
	// Queries that exercise the exact-name and server-mention rules too.
	queries = append(queries, "github: create an issue", "read_text_file", "desktop commander list processes")
	dense, _ := newDense(t)
	for _, tc := range []struct {
		name  string
		dense *embed.Dense
	}{{"bm25", nil}, {"dense", dense}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, tc.dense, Options{})
			upsertAll(t, p, metas)
			ctx := context.Background()
			for _, q := range queries {
				whole, err := p.Search(ctx, q, len(tools))
				if err != nil {
					t.Fatal(err)
				}
				if whole.DenseErr != nil {
					t.Fatalf("%q: dense retrieval failed: %v", q, whole.DenseErr)
				}
				for _, limit := range []int{1, 5, 15, 40, 60} {
					got, err := p.Search(ctx, q, limit)
					if err != nil {
						t.Fatal(err)
					}
					want := whole.Hits[:min(limit, len(whole.Hits))]
					if diff := cmp.Diff(ids(want), ids(got.Hits)); diff != "" {
						t.Fatalf("%q at limit %d is not the start of the whole ranking (-whole +got):\n%s", q, limit, diff)
					}
					if got.Weak != whole.Weak {
						t.Errorf("%q at limit %d: weak %v, whole ranking weak %v", q, limit, got.Weak, whole.Weak)
					}
				}
			}
		})
	}
}

// TestDenseOnly ranks by similarity alone: a paraphrase with no word in
// common with its tool still finds it first.
func TestDenseOnly(t *testing.T) {
	tools := []config.ToolMetadata{
		{ServerName: "weather", Name: "get_forecast", Description: "Get the weather forecast for a city."},
		{ServerName: "mail", Name: "send_email", Description: "Send an email message."},
	}
	dense, _ := newDense(t)
	p := newPipeline(t, dense, Options{DenseOnly: true})
	upsertAll(t, p, tools)
	got, err := p.Search(context.Background(), "will I need an umbrella", 2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got.Hits)) != "[weather:get_forecast mail:send_email]" {
		t.Errorf("got %v, want the forecast first, then the other tool", ids(got.Hits))
	}
	lex := newPipeline(t, nil, Options{})
	upsertAll(t, lex, tools)
	if r, _ := lex.Search(context.Background(), "will I need an umbrella", 2); len(r.Hits) != 0 {
		t.Fatalf("BM25 finds %v for the paraphrase; the test needs one it misses", ids(r.Hits))
	}
}
