package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
)

// newIndex opens an index that the test closes.
func newIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	ix, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func mustSearch(t testing.TB, ix *Index, q string, limit int) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q, limit)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func tool(server, name, desc, params string) config.ToolMetadata {
	return config.ToolMetadata{ServerName: server, Name: name, Description: desc, ParamsJSON: params}
}

// smallSet is a hand-written tool set with the traps that hurt retrieval in
// practice: short names made of generic words (get, new, move, close,
// branch) and identifiers in several styles.
var smallSet = []config.ToolMetadata{
	tool("fs", "read_text_file", "Read the complete contents of a file from the file system as text.",
		`{"type":"object","properties":{"path":{"type":"string","description":"Path of the file to read"}},"required":["path"]}`),
	tool("fs", "write_file", "Create a new file or completely overwrite an existing file with new content.",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string","description":"Text to write"}}}`),
	tool("fs", "move_file", "Move or rename files and directories.", ""),
	tool("fs", "listDirectory", "List the entries of a directory, marking files and subdirectories.", ""),
	tool("git", "git_branch", "List git branches.", ""),
	tool("git", "git_create_branch", "Create a new branch from an optional base branch.", ""),
	tool("git", "git_log", "Show the commit history of the repository.", ""),
	tool("browser", "new_page", "Open a new tab.", ""),
	tool("browser", "close", "Close the browser.", ""),
	tool("weather", "get", "Get.", ""),
	tool("weather", "get-forecast", "Weather forecast for a city: temperature, rain and wind for the next days.",
		`{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Seattle"},"days":{"type":"integer"}}}`),
	tool("stocks", "quote.latest", "Latest share price of a listed company by ticker symbol.",
		`{"type":"object","properties":{"ticker":{"type":"string","description":"Ticker symbol such as AAPL"}}}`),
	tool("issues", "closeIssue", "Close an issue in the tracker, optionally with a comment.", ""),
}

func TestSearchSmallSet(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	tests := []struct {
		query string
		top   string // want this id first
	}{
		{"read the contents of a file", "fs:read_text_file"},
		{"read text file", "fs:read_text_file"},
		{"read_text_file", "fs:read_text_file"},
		{"readTextFile", "fs:read_text_file"},
		{"overwrite a file with new content", "fs:write_file"},
		{"rename a directory", "fs:move_file"},
		{"list directory entries", "fs:listDirectory"},
		{"create a new git branch from main", "git:git_create_branch"},
		{"show commit history", "git:git_log"},
		{"get the weather forecast for Seattle", "weather:get-forecast"},
		{"will it rain in the city tomorrow", "weather:get-forecast"},
		{"latest share price for ticker AAPL", "stocks:quote.latest"},
		{"close the issue with a comment", "issues:closeIssue"},
		{"close issue", "issues:closeIssue"},
		{"open a new browser tab", "browser:new_page"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits := mustSearch(t, ix, tc.query, 5)
			if len(hits) == 0 || hits[0].ID != tc.top {
				t.Errorf("got %v, want %s first", ids(hits), tc.top)
			}
		})
	}
}

// TestCorpusV2ReadFile is the retrieval check of the end-to-end smoke test,
// over the frozen corpus of the reference servers.
func TestCorpusV2ReadFile(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, corpusV2(t))
	hits := mustSearch(t, ix, "read the contents of a file", 3)
	for _, h := range hits {
		if h.Server == "filesystem" && strings.HasPrefix(h.Name, "read_") {
			return
		}
	}
	t.Errorf("got %v, want a filesystem read tool in the top 3", ids(hits))
}

func TestHitFields(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	hits := mustSearch(t, ix, "forecast", 1)
	// The one-word query is wholly in the tool's text: coverage 1.
	want := []Hit{{ID: "weather:get-forecast", Server: "weather", Name: "get-forecast", Score: hits[0].Score, Coverage: 1}}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("hits mismatch (-want +got):\n%s", diff)
	}
	if hits[0].Score <= 0 {
		t.Errorf("got score %v, want > 0", hits[0].Score)
	}
}

func TestSearchInput(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	for _, q := range []string{"", "   ", "\t\n"} {
		_, err := ix.Search(context.Background(), q, 5)
		if err == nil || !strings.Contains(err.Error(), "pass a few words describing the tool you need") {
			t.Errorf("Search(%q): got error %v, want one saying what to pass", q, err)
		}
	}
	for _, limit := range []int{0, -1} {
		if _, err := ix.Search(context.Background(), "file", limit); err == nil {
			t.Errorf("Search with limit %d: got no error, want one", limit)
		}
	}
	// Only stop words: nothing to match, and not an error.
	if hits := mustSearch(t, ix, "the of and", 5); len(hits) != 0 {
		t.Errorf("got %v for a stop-word query, want no hits", ids(hits))
	}
	if hits := mustSearch(t, ix, "zyzzyva", 5); len(hits) != 0 {
		t.Errorf("got %v for an unknown word, want no hits", ids(hits))
	}
	if hits := mustSearch(t, ix, "file", 2); len(hits) != 2 {
		t.Errorf("got %d hits with limit 2, want 2", len(hits))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, "file", 5); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v with a cancelled context, want context.Canceled", err)
	}
}

func TestUpsertReplacesServer(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	before, err := ix.Count()
	if err != nil {
		t.Fatal(err)
	}
	// fs now has two tools: read_text_file is described differently,
	// write_file is unchanged and the other two are gone.
	next := []config.ToolMetadata{
		tool("fs", "read_text_file", "Return a document's characters as UTF-8.", ""),
		smallSet[1],
	}
	if err := ix.Upsert("fs", next); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, ix), before-2; got != want {
		t.Errorf("got %d documents, want %d", got, want)
	}
	if hits := mustSearch(t, ix, "rename directories", 10); contains(hits, "fs:move_file") {
		t.Errorf("got %v, want fs:move_file gone", ids(hits))
	}
	if hits := mustSearch(t, ix, "complete contents", 10); contains(hits, "fs:read_text_file") {
		t.Errorf("got %v, want the old description of fs:read_text_file gone", ids(hits))
	}
	if hits := mustSearch(t, ix, "utf-8 characters", 10); !contains(hits, "fs:read_text_file") {
		t.Errorf("got %v, want fs:read_text_file found by its new description", ids(hits))
	}
	if hits := mustSearch(t, ix, "git branches", 10); !contains(hits, "git:git_branch") {
		t.Errorf("got %v, want other servers untouched", ids(hits))
	}
	// Upserting the same set again changes nothing.
	if err := ix.Upsert("fs", next); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, ix), before-2; got != want {
		t.Errorf("after a repeated upsert got %d documents, want %d", got, want)
	}
	// An empty set removes the server.
	if err := ix.Upsert("fs", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, ix), before-4; got != want {
		t.Errorf("after an empty upsert got %d documents, want %d", got, want)
	}
}

func TestUpsertServerPrefixes(t *testing.T) {
	// "git" must not touch "git-extra" or "gitx": deletion is by exact name.
	ix := newIndex(t, Options{})
	for _, s := range []string{"git", "git-extra", "gitx"} {
		if err := ix.Upsert(s, []config.ToolMetadata{tool(s, "status", "Show status.", "")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Remove("git"); err != nil {
		t.Fatal(err)
	}
	got := ids(mustSearch(t, ix, "status", 10))
	sort.Strings(got)
	if diff := cmp.Diff([]string{"git-extra:status", "gitx:status"}, got); diff != "" {
		t.Errorf("hits mismatch (-want +got):\n%s", diff)
	}
}

func TestUpsertRejectsBadInput(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	tests := []struct {
		name, server string
		tools        []config.ToolMetadata
		want         string
	}{
		{"other server", "fs", []config.ToolMetadata{tool("git", "x", "", "")}, `tool 0 ("x") belongs to server "git"`},
		{"empty name", "fs", []config.ToolMetadata{tool("fs", " ", "", "")}, "tool 0 has an empty name"},
		{"duplicate", "fs", []config.ToolMetadata{tool("fs", "a", "", ""), tool("fs", "a", "", "")}, `tool "a" is listed twice`},
		{"empty server", "", nil, `invalid server name ""`},
		{"colon in server", "a:b", nil, `invalid server name "a:b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ix.Upsert(tc.server, tc.tools)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if got := mustCount(t, ix); got != len(smallSet) {
				t.Errorf("got %d documents after a rejected upsert, want %d", got, len(smallSet))
			}
		})
	}
	if err := ix.Remove("a:b"); err == nil {
		t.Error("Remove(\"a:b\"): got no error, want one")
	}
}

func TestRemove(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	if err := ix.Remove("git"); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, ix), len(smallSet)-3; got != want {
		t.Errorf("got %d documents, want %d", got, want)
	}
	for _, h := range mustSearch(t, ix, "git branch commit history", 10) {
		if h.Server == "git" {
			t.Errorf("got %s after removing git", h.ID)
		}
	}
	if err := ix.Remove("never-added"); err != nil {
		t.Errorf("removing an unknown server: %v", err)
	}
}

func TestTiesAreOrderedByID(t *testing.T) {
	// In memory Bleve happens to visit documents in id order; on disk
	// (Scorch) in the order they were added, so only there does the cut at
	// a limit show whether equals are cut by id.
	for _, tc := range []struct{ name, dir string }{{"memory", ""}, {"disk", t.TempDir()}} {
		t.Run(tc.name, func(t *testing.T) {
			ix := newIndex(t, Options{Dir: tc.dir})
			// Identical tools on servers added out of order score the same (the
			// server names are one word each, so the documents have equal lengths).
			// More tied tools than a search looks past the cut (tieSlack), in
			// an order unlike their ids.
			var added []string
			for i := range tieSlack + 8 {
				added = append(added, fmt.Sprintf("s%02d", (i*17)%(tieSlack+8)))
			}
			for _, s := range added {
				if err := ix.Upsert(s, []config.ToolMetadata{tool(s, "echo", "Echo a message back.", "")}); err != nil {
					t.Fatal(err)
				}
			}
			var want []string
			for _, s := range slices.Sorted(slices.Values(added)) {
				want = append(want, s+":echo")
			}
			for range 5 {
				hits := mustSearch(t, ix, "echo message", len(want))
				if diff := cmp.Diff(want, ids(hits)); diff != "" {
					t.Fatalf("order mismatch (-want +got):\n%s", diff)
				}
				for _, h := range hits[1:] {
					if h.Score != hits[0].Score {
						t.Fatalf("got scores %v and %v, want a tie", hits[0].Score, h.Score)
					}
				}
			}
			// The cut at limit is by the same order: the answer at a limit is
			// the start of the answer at a larger one.
			for _, limit := range []int{1, 2, 3, 5, 8, len(want) - 1, len(want)} {
				if diff := cmp.Diff(want[:limit], ids(mustSearch(t, ix, "echo", limit))); diff != "" {
					t.Errorf("limit %d: order mismatch (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
}

func TestOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	ix, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	load(t, ix, smallSet)
	want := mustSearch(t, ix, "read the contents of a file", 5)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("reopen keeps documents and scores", func(t *testing.T) {
		ix := newIndex(t, Options{Dir: dir})
		if got := mustCount(t, ix); got != len(smallSet) {
			t.Errorf("got %d documents after reopening, want %d", got, len(smallSet))
		}
		if diff := cmp.Diff(want, mustSearch(t, ix, "read the contents of a file", 5)); diff != "" {
			t.Errorf("hits changed across reopen (-before +after):\n%s", diff)
		}
	})

	t.Run("locked by another user", func(t *testing.T) {
		holder := newIndex(t, Options{Dir: dir})
		_, err := New(Options{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "locked by another process") {
			t.Fatalf("got %v, want a lock error", err)
		}
		if got := mustCount(t, holder); got != len(smallSet) {
			t.Errorf("the holder's index has %d documents, want %d intact", got, len(smallSet))
		}
	})

	t.Run("stale mapping is rebuilt", func(t *testing.T) {
		ix := newIndex(t, Options{Dir: dir})
		if err := ix.bleve.SetInternal(internalStampKey, []byte("v0-old")); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		re := newIndex(t, Options{Dir: dir})
		if got := mustCount(t, re); got != 0 {
			t.Errorf("got %d documents in a rebuilt index, want 0", got)
		}
		load(t, re, smallSet)
		if diff := cmp.Diff(want, mustSearch(t, re, "read the contents of a file", 5)); diff != "" {
			t.Errorf("rebuilt index ranks differently (-want +got):\n%s", diff)
		}
	})

	t.Run("missing statistics are rebuilt", func(t *testing.T) {
		ix := newIndex(t, Options{Dir: dir})
		if got := mustCount(t, ix); got != len(smallSet) {
			t.Fatalf("got %d documents, want %d", got, len(smallSet))
		}
		if err := ix.bleve.DeleteInternal(statsKey("fs")); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		re := newIndex(t, Options{Dir: dir})
		if got := mustCount(t, re); got != 0 {
			t.Errorf("got %d documents in a rebuilt index, want 0", got)
		}
		load(t, re, smallSet)
	})

	t.Run("corrupt index is rebuilt", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "bleve", "index_meta.json"), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		re := newIndex(t, Options{Dir: dir})
		if got := mustCount(t, re); got != 0 {
			t.Errorf("got %d documents in a rebuilt index, want 0", got)
		}
		load(t, re, smallSet[:2])
		if got := mustCount(t, re); got != 2 {
			t.Errorf("got %d documents, want 2", got)
		}
	})
}

func TestClosed(t *testing.T) {
	ix, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ix.Search(context.Background(), "x", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close: got %v, want ErrClosed", err)
	}
	if err := ix.Upsert("a", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Upsert after Close: got %v, want ErrClosed", err)
	}
	if _, err := ix.Count(); !errors.Is(err, ErrClosed) {
		t.Errorf("Count after Close: got %v, want ErrClosed", err)
	}
}

// TestConcurrentSearchAndUpsert runs searches while servers are replaced
// and removed; under -race it also checks the locking. Every search must see
// a whole version of the "flip" server: both of its tools or neither.
func TestConcurrentSearchAndUpsert(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	flip := []config.ToolMetadata{
		tool("flip", "alpha_widget", "Frobnicate the widget.", ""),
		tool("flip", "beta_widget", "Frobnicate the widget twice.", ""),
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100; i++ {
			var err error
			if i%2 == 0 {
				err = ix.Upsert("flip", flip)
			} else {
				err = ix.Remove("flip")
			}
			if err != nil {
				errc <- err
				break
			}
		}
		close(stop)
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				hits, err := ix.Search(context.Background(), "frobnicate widget", 5)
				if err != nil {
					errc <- err
					return
				}
				if len(hits) != 0 && len(hits) != 2 {
					errc <- fmt.Errorf("got %v, want both flip tools or neither", ids(hits))
					return
				}
				if _, err := ix.Count(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestBM25 checks that scores follow BM25 (as Bleve computes it, with term
// frequency taken as sqrt(freq)) and not Bleve's default TF-IDF, on two
// effects where the models disagree: term-frequency saturation and
// length normalization.
func TestBM25(t *testing.T) {
	const k1, b = 1.2, 0.75
	filler := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("zq%d", i)
		}
		return strings.Join(w, " ")
	}
	// Description lengths in tokens: once = 10, many = 10, long = 40.
	tools := []config.ToolMetadata{
		tool("s", "once", "kiwi "+filler(9), ""),
		tool("s", "many", strings.Repeat("kiwi ", 9)+filler(1), ""),
		tool("s", "long", "kiwi "+filler(39), ""),
		tool("s", "other", filler(10), ""),
	}
	scores := func(ix *Index) map[string]float64 {
		q := termQueryOn("kiwi", fieldDescription)
		res, err := ix.search(context.Background(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range res.Hits {
			out[h.ID] = h.Score
		}
		return out
	}

	// Expected BM25: idf over 4 documents, 3 containing the term; average
	// description length ceil((10+10+40+10)/4) = 18.
	n, df, avgdl := 4.0, 3.0, 18.0
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	bm25 := func(freq, dl float64) float64 {
		tf := math.Sqrt(freq)
		return idf * tf * k1 / (tf + k1*(1-b+b*dl/avgdl))
	}
	var got map[string]float64
	for _, opts := range []Options{{}, {Dir: t.TempDir()}} {
		bm := newIndex(t, opts)
		load(t, bm, tools)
		got = scores(bm)
		for id, w := range map[string]float64{"s:once": bm25(1, 10), "s:many": bm25(9, 10), "s:long": bm25(1, 40)} {
			if math.Abs(got[id]-w) > 1e-6*w {
				t.Errorf("%+v: %s: got score %.6f, want BM25 %.6f", opts, id, got[id], w)
			}
		}
	}

	tfidf := newTFIDFIndex(t)
	load(t, tfidf, tools)
	old := scores(tfidf)

	// Saturation: nine occurrences instead of one. TF-IDF scales by
	// sqrt(9) = 3; BM25 by less, exactly 3(1+K)/(3+K) with K the length
	// term for a 10-token field.
	K := k1 * (1 - b + b*10/avgdl)
	if r := old["s:many"] / old["s:once"]; math.Abs(r-3) > 1e-6 {
		t.Errorf("TF-IDF saturation ratio: got %.4f, want 3", r)
	}
	if r, w := got["s:many"]/got["s:once"], 3*(1+K)/(3+K); math.Abs(r-w) > 1e-6 || r >= 3 {
		t.Errorf("BM25 saturation ratio: got %.4f, want %.4f (< 3)", r, w)
	}
	// Length: the same single occurrence in a field four times as long.
	// TF-IDF divides by sqrt(4) = 2; BM25 by (1+K40)/(1+K10).
	if r := old["s:once"] / old["s:long"]; math.Abs(r-2) > 1e-3 {
		t.Errorf("TF-IDF length ratio: got %.4f, want 2", r)
	}
	K40 := k1 * (1 - b + b*40/avgdl)
	if r, w := got["s:once"]/got["s:long"], (1+K40)/(1+K); math.Abs(r-w) > 1e-6 {
		t.Errorf("BM25 length ratio: got %.4f, want %.4f", r, w)
	}
}

func mustCount(t testing.TB, ix *Index) int {
	t.Helper()
	n, err := ix.Count()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func contains(hits []Hit, id string) bool {
	for _, h := range hits {
		if h.ID == id {
			return true
		}
	}
	return false
}

func termQueryOn(term, field string) query.Query {
	q := query.NewTermQuery(term)
	q.SetField(field)
	return q
}

// newTFIDFIndex is an in-memory index identical to New's except that it
// scores with Bleve's default TF-IDF, for comparison.
func newTFIDFIndex(t testing.TB) *Index {
	t.Helper()
	m, err := newMapping(DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	m.ScoringModel = bleveindex.TFIDFScoring
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := &Index{mapping: m, analyzer: m.AnalyzerNamed(textAnalyzer), plan: defaultPlan, stats: map[string]serverStats{}, lookup: newLookup(), bleve: idx}
	ix.bm25 = totals(ix.stats)
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

// TestExpanderPanics: an Expander that panics, in the background builder
// or in a search, is logged and searches go on without expansion; the
// process survives.
func TestExpanderPanics(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	ix := newIndex(t, Options{
		Expander: func([]string) ExpandFunc { panic("expander bug") },
		Logger:   zap.New(core),
	})
	if err := ix.Upsert("fs", []config.ToolMetadata{tool("fs", "read_file", "Read a file.", "")}); err != nil {
		t.Fatal(err)
	}
	WaitExpanderForTest(ix)
	if got := ids(mustSearch(t, ix, "read file", 5)); len(got) != 1 || got[0] != "fs:read_file" {
		t.Errorf("got %v, want fs:read_file found without expansion", got)
	}
	if n := logs.FilterMessageSnippet("query expansion panicked").Len(); n < 1 {
		t.Errorf("got %d log entries for the panic, want at least 1", n)
	}
}
