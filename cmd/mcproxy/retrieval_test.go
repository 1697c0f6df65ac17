package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/server"
)

var retrievalTools = []config.ToolMetadata{
	{ServerName: "fs", Name: "read_text_file", Description: "Read the complete contents of a file as text."},
	{ServerName: "fs", Name: "write_file", Description: "Create or overwrite a file with new content."},
	{ServerName: "fs", Name: "list_directory", Description: "List the entries of a directory."},
	{ServerName: "clock", Name: "now", Description: "Current time in a time zone."},
}

func upsertAll(t *testing.T, x searchIndex) {
	t.Helper()
	byServer := map[string][]config.ToolMetadata{}
	for _, tl := range retrievalTools {
		byServer[tl.ServerName] = append(byServer[tl.ServerName], tl)
	}
	for s, tools := range byServer {
		if err := x.Upsert(s, tools); err != nil {
			t.Fatal(err)
		}
	}
}

func hitIDs(hits []server.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// TestSearchIndexDense runs the front's index adapter with dense retrieval
// against a real (loopback) embeddings server: fused answers while it works,
// the lexical answer when it fails, and weakness judged on the wording.
func TestSearchIndexDense(t *testing.T) {
	ctx := context.Background()
	newIx := func() *index.Index {
		ix, err := index.New(index.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		return ix
	}
	lexical := searchIndex{ix: newIx()}
	upsertAll(t, lexical)

	srv := embedtest.New(embedtest.Options{})
	t.Cleanup(srv.Close)
	client, err := embed.NewClient(embed.ClientOptions{URL: srv.URL, Model: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dense := embed.New(client, embed.Options{})
	t.Cleanup(func() { dense.Close() })
	hybrid := searchIndex{ix: newIx(), dense: dense}
	upsertAll(t, hybrid)
	if err := dense.Sync(ctx); err != nil {
		t.Fatalf("embedding the tools: %v", err)
	}

	got, err := hybrid.Search(ctx, "read the contents of a file", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %v, want 2 hits (the limit)", hitIDs(got))
	}
	if srv.Requests() == 0 {
		t.Fatal("the embeddings server was never asked: dense retrieval did not run")
	}
	if got[0].Weak {
		t.Errorf("got %+v, want a strong first hit for a query in the tools' own words", got[0])
	}

	weak, err := hybrid.Search(ctx, "quantum spectroscopy lattice file", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(weak) == 0 || !weak[0].Weak {
		t.Errorf("got %+v, want the first hit marked weak: the query shares little wording with any tool", weak)
	}

	// A failing provider never fails a search: the answer is the lexical one.
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
	if diff := cmp.Diff(hitIDs(want), hitIDs(got)); diff != "" {
		t.Errorf("provider down: hits differ from lexical search (-lexical +got):\n%s", diff)
	}
}

func TestSearchIndexLexicalLimit(t *testing.T) {
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	x := searchIndex{ix: ix}
	upsertAll(t, x)
	got, err := x.Search(context.Background(), "file directory time", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("got %v, want 2 hits", hitIDs(got))
	}
	if err := x.Remove("fs"); err != nil {
		t.Fatal(err)
	}
	got, _ = x.Search(context.Background(), "file", 5)
	if len(got) != 0 {
		t.Errorf("after removing fs: got %v, want no hits", hitIDs(got))
	}
}
