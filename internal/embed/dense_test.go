package embed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/index"
)

// tools is a small catalogue whose descriptions share no word with the
// paraphrased queries below.
var tools = map[string][]config.ToolMetadata{
	"weather": {{Name: "get_forecast", ServerName: "weather", Description: "Get the weather forecast for a city.",
		ParamsJSON: `{"type":"object","properties":{"city":{"type":"string","description":"City name"}}}`}},
	"finance": {{Name: "get_stock_price", ServerName: "finance", Description: "Look up the latest stock price for a ticker symbol."}},
	"mail":    {{Name: "send_email", ServerName: "mail", Description: "Send an email message to a recipient."}},
	"github": {
		{Name: "create_issue", ServerName: "github", Description: "Open a new issue in a repository."},
		{Name: "list_commits", ServerName: "github", Description: "List the commits of a branch."},
	},
	"fs": {{Name: "delete_file", ServerName: "fs", Description: "Delete a file from disk."}},
}

func allServers() []string {
	var names []string
	for s := range tools {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	srv   *embedtest.Server
	dense *Dense
	logs  *observer.ObservedLogs
	clock *clock
}

func newDense(t *testing.T, srv *embedtest.Server, opts Options) fixture {
	t.Helper()
	c := newClient(t, ClientOptions{URL: srv.URL, Model: "toy", Timeout: 5 * time.Second})
	core, logs := observer.New(zapcore.DebugLevel)
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts.Logger = zap.New(core)
	opts.Now = clk.now
	d := New(c, opts)
	t.Cleanup(func() { d.Close() })
	return fixture{srv: srv, dense: d, logs: logs, clock: clk}
}

// upsertAll indexes every tool and waits until all have vectors.
func (f fixture) upsertAll(t *testing.T) {
	t.Helper()
	for _, s := range allServers() {
		if err := f.dense.Upsert(s, tools[s]); err != nil {
			t.Fatalf("Upsert %s: %v", s, err)
		}
	}
	if err := f.dense.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// newIndex is the BM25 index without its synonym lexicon, which bridges
// some of the paraphrases these tests need BM25 to miss ("shares" is a
// synonym of "stock").
func newIndex(t *testing.T) *index.Index {
	t.Helper()
	f := index.DefaultFeatures()
	f.Synonyms = false
	ix, err := index.New(index.Options{Features: &f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	for _, s := range allServers() {
		if err := ix.Upsert(s, tools[s]); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

func ids(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// TestParaphraseBridged checks the wiring end to end against the real BM25
// index: for a paraphrase sharing no word with its tool, BM25 misses and
// the fused answer finds it; where BM25 is right, fusion keeps it first.
// The toy model's synonym table makes the bridge; this shows plumbing, not
// quality.
func TestParaphraseBridged(t *testing.T) {
	f := newDense(t, newServer(t, embedtest.Options{}), Options{})
	f.upsertAll(t)
	ix := newIndex(t)
	tests := []struct {
		query, want string
		lexicalMiss bool
	}{
		{"will I need an umbrella tomorrow", "weather:get_forecast", true},
		{"how much are my shares worth", "finance:get_stock_price", true},
		{"send an email", "mail:send_email", false},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			ctx := context.Background()
			lexical, err := ix.Search(ctx, tc.query, f.dense.Depth())
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Index(ids(lexical), tc.want); tc.lexicalMiss && got == 0 {
				t.Fatalf("BM25 ranks %s first for %q; the test needs a query it misses", tc.want, tc.query)
			}
			dense, err := f.dense.Search(ctx, tc.query, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(dense) == 0 || dense[0].ID != tc.want {
				t.Errorf("dense: got %v, want %s first", ids(dense), tc.want)
			}
			fused, err := f.dense.Hybrid(ctx, tc.query, lexical, 3)
			if err != nil {
				t.Fatalf("hybrid: %v", err)
			}
			if len(fused) == 0 || fused[0].ID != tc.want {
				t.Errorf("hybrid: got %v, want %s first (BM25 alone: %v)", ids(fused), tc.want, ids(lexical))
			}
		})
	}
}

func TestSearchScores(t *testing.T) {
	f := newDense(t, newServer(t, embedtest.Options{}), Options{})
	f.upsertAll(t)
	got, err := f.dense.Search(context.Background(), "erase a document", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d hits, want all 6 tools", len(got))
	}
	if got[0].ID != "fs:delete_file" || got[0].Server != "fs" || got[0].Name != "delete_file" {
		t.Errorf("got first hit %+v, want fs:delete_file with Server and Name", got[0])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score || got[i-1].Score > 1.0001 || got[i].Score < -1.0001 {
			t.Errorf("got scores %v then %v, want descending cosine similarities", got[i-1].Score, got[i].Score)
		}
	}
	top2, _ := f.dense.Search(context.Background(), "erase a document", 2)
	if diff := cmp.Diff(got[:2], top2); diff != "" {
		t.Errorf("k=2 is not the head of the full ranking (-full +k2):\n%s", diff)
	}
}

// TestTopK checks the bounded heap against hand-made vectors: ties go to
// the lower ID whatever k is.
func TestTopK(t *testing.T) {
	s := &snapshot{dim: 2}
	vecs := map[string][]float32{"s:a": {0, 1}, "s:b": {1, 0}, "s:c": {0.6, 0.8}, "s:d": {1, 0}, "s:e": {-1, 0}}
	for _, id := range []string{"s:a", "s:b", "s:c", "s:d", "s:e"} {
		s.hits = append(s.hits, index.Hit{ID: id})
		s.vecs = append(s.vecs, vecs[id])
	}
	q := []float32{1, 0}
	for k, want := range map[int][]string{
		1: {"s:b"}, 2: {"s:b", "s:d"}, 3: {"s:b", "s:d", "s:c"}, 5: {"s:b", "s:d", "s:c", "s:a", "s:e"}, 9: {"s:b", "s:d", "s:c", "s:a", "s:e"},
	} {
		if got := ids(s.topK(q, k)); !slices.Equal(got, want) {
			t.Errorf("k=%d: got %v, want %v", k, got, want)
		}
	}
	if got := s.topK(q, 3); got[2].Score != float64(float32(0.6)) {
		t.Errorf("got score %v for s:c, want 0.6", got[2].Score)
	}
}

func TestCacheAvoidsReembedding(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	dir := filepath.Join(t.TempDir(), CacheDirName)
	first := newDense(t, srv, Options{CacheDir: dir})
	first.upsertAll(t)
	if got, want := srv.Inputs(), 6; got != want {
		t.Fatalf("first start: got %d texts embedded, want %d", got, want)
	}
	// Same tools again: vectors are in memory.
	first.upsertAll(t)
	if got := srv.Inputs(); got != 6 {
		t.Errorf("unchanged tools: got %d texts embedded in total, want still 6", got)
	}
	first.dense.Close()

	// A restart: every vector comes from disk.
	reqs := srv.Requests()
	second := newDense(t, srv, Options{CacheDir: dir})
	second.upsertAll(t)
	if got := srv.Requests(); got != reqs {
		t.Errorf("restart: got %d new requests, want none", got-reqs)
	}
	if s := second.dense.Stats(); s.Embedded != 6 || s.Pending != 0 {
		t.Errorf("restart: got %+v, want all 6 tools embedded", s)
	}

	// One changed description: exactly that tool is embedded again.
	changed := slices.Clone(tools["github"])
	changed[1].Description = "List the recent commits of a branch, newest first."
	if err := second.dense.Upsert("github", changed); err != nil {
		t.Fatal(err)
	}
	if err := second.dense.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Inputs(); got != 7 {
		t.Errorf("one changed tool: got %d texts embedded in total, want 7", got)
	}
	// Another document prefix changes every text, so every key.
	third := newDense(t, srv, Options{CacheDir: dir, DocumentPrefix: "passage: "})
	third.upsertAll(t)
	if got := srv.Inputs(); got != 13 {
		t.Errorf("new document prefix: got %d texts embedded in total, want 13", got)
	}
}

func TestCorruptCacheEntryRebuilt(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	dir := t.TempDir()
	first := newDense(t, srv, Options{CacheDir: dir})
	first.upsertAll(t)
	first.dense.Close()

	text := ToolText(tools["fs"][0])
	key := cacheKey("toy", text)
	path := (&diskCache{dir: dir}).path(key)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the cached vector: %v", err)
	}
	damages := map[string][]byte{
		"flipped byte": func() []byte { b := slices.Clone(data); b[20] ^= 0xff; return b }(),
		"truncated":    data[:len(data)/2],
		"empty":        {},
		"wrong magic":  append([]byte("XXXXXXXX"), data[8:]...),
	}
	for name, bad := range damages {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			before := srv.Inputs()
			again := newDense(t, srv, Options{CacheDir: dir})
			again.upsertAll(t)
			if got := srv.Inputs() - before; got != 1 {
				t.Errorf("got %d texts embedded, want 1 (the damaged entry)", got)
			}
			if _, ok := (&diskCache{dir: dir}).load(key); !ok {
				t.Errorf("the damaged entry was not rewritten")
			}
		})
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*", ".tmp-*")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}

// TestOutageFallsBack drives the provider through an outage: a query that
// times out falls back to BM25, the outage is logged once, the provider is
// left alone while it rests, probed after the retry interval, and dense
// search resumes once it answers.
func TestOutageFallsBack(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	// No query cache: every search here must reach the provider.
	f := newDense(t, srv, Options{QueryTimeout: 50 * time.Millisecond, RetryInterval: time.Minute, QueryCacheSize: -1})
	f.upsertAll(t)
	ix := newIndex(t)
	ctx := context.Background()
	const query = "will I need an umbrella tomorrow for the city"
	lexical, err := ix.Search(ctx, query, f.dense.Depth())
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := f.dense.Hybrid(ctx, query, lexical, 5)
	if err != nil {
		t.Fatalf("healthy provider: %v", err)
	}
	if cmp.Equal(ids(healthy), ids(lexical[:min(5, len(lexical))])) {
		t.Fatalf("with a healthy provider the fused answer %v equals BM25's; the test needs one that differs", ids(healthy))
	}

	srv.SetFault(embedtest.Hang)
	warnings := func() int { return f.logs.FilterLevelExact(zapcore.WarnLevel).Len() }
	if got, err := f.dense.Hybrid(ctx, query, lexical, 5); !cmp.Equal(ids(got), ids(lexical[:min(5, len(lexical))])) || err == nil {
		t.Errorf("provider hangs: got %v, %v; want BM25's answer %v and the provider's error", ids(got), err, ids(lexical))
	}
	if warnings() != 1 {
		t.Errorf("got %d warnings, want 1 for the outage", warnings())
	}
	reqs := srv.Requests()
	_, err = f.dense.Search(ctx, query, 5)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("while resting: got %v, want ErrUnavailable", err)
	}
	if _, err := f.dense.Hybrid(ctx, query, lexical, 5); !errors.Is(err, ErrUnavailable) {
		t.Errorf("hybrid while resting: got %v, want ErrUnavailable", err)
	}
	if got := srv.Requests() - reqs; got != 0 {
		t.Errorf("while resting: got %d requests, want none", got)
	}
	if !f.dense.Stats().Down {
		t.Errorf("Stats: got Down false during an outage, want true")
	}

	f.clock.advance(time.Minute)
	_, _ = f.dense.Hybrid(ctx, query, lexical, 5) // the probe, still hanging
	if got := srv.Requests() - reqs; got != 1 {
		t.Errorf("after the retry interval: got %d requests, want 1 probe", got)
	}
	if warnings() != 1 {
		t.Errorf("second failure of the same outage: got %d warnings, want still 1", warnings())
	}

	srv.SetFault(embedtest.None)
	f.clock.advance(time.Minute)
	if got, err := f.dense.Hybrid(ctx, query, lexical, 5); !cmp.Equal(ids(got), ids(healthy)) || err != nil {
		t.Errorf("provider back: got %v, %v; want the fused answer %v", ids(got), err, ids(healthy))
	}
	if n := f.logs.FilterMessageSnippet("dense search resumed").Len(); n != 1 {
		t.Errorf("got %d recovery messages, want 1", n)
	}
	for _, e := range f.logs.All() {
		if strings.Contains(e.Message+fmt.Sprint(e.ContextMap()), "umbrella") {
			t.Errorf("a log entry quotes the query: %q", e.Message)
		}
	}
}

// TestWorker checks the background indexing: Upsert returns at once and
// the worker embeds; during an outage tools wait without requests; once a
// query embedding succeeds again the worker catches up by itself.
func TestWorker(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	passes := make(chan struct{}, 64)
	f := newDense(t, srv, Options{RetryInterval: time.Minute, afterWork: func() { passes <- struct{}{} }})
	ctx := context.Background()
	pass := func() {
		t.Helper()
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker did not finish a pass within 10s")
		}
	}

	if err := f.dense.Upsert("weather", tools["weather"]); err != nil {
		t.Fatal(err)
	}
	pass()
	if s := f.dense.Stats(); s.Embedded != 1 || srv.Inputs() != 1 {
		t.Fatalf("after a pass: got %+v and %d texts embedded, want 1 and 1", s, srv.Inputs())
	}

	srv.SetFault(embedtest.Status500)
	f.dense.Upsert("finance", tools["finance"])
	pass()
	if !f.dense.Stats().Down || f.logs.FilterLevelExact(zapcore.WarnLevel).Len() != 1 {
		t.Fatalf("a 500 while indexing: got %+v and %d warnings, want down and 1", f.dense.Stats(), f.logs.FilterLevelExact(zapcore.WarnLevel).Len())
	}
	// While the provider rests the worker does not call it.
	reqs := srv.Requests()
	f.dense.Upsert("mail", tools["mail"])
	pass()
	if got := srv.Requests() - reqs; got != 0 {
		t.Errorf("while resting: got %d requests, want none", got)
	}
	if s := f.dense.Stats(); s.Tools != 3 || s.Embedded != 1 || s.Pending != 2 {
		t.Errorf("got %+v, want 3 tools, 1 embedded, 2 pending", s)
	}
	// Sync does not wait for the rest; it reports the provider's error.
	if err := f.dense.Sync(ctx); err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("Sync during the outage: got %v, want the provider's 500", err)
	}

	srv.SetFault(embedtest.None)
	f.clock.advance(time.Minute)
	if _, err := f.dense.Search(ctx, "forecast", 1); err != nil {
		t.Fatalf("provider back: %v", err)
	}
	pass()
	if s := f.dense.Stats(); s.Embedded != 3 || s.Pending != 0 || s.Down {
		t.Errorf("after catching up: got %+v, want all 3 embedded", s)
	}
	got, err := f.dense.Search(ctx, "how much are my shares worth", 1)
	if err != nil || len(got) != 1 || got[0].ID != "finance:get_stock_price" {
		t.Errorf("after catching up: got %v, %v; want finance:get_stock_price", ids(got), err)
	}
}

// TestCallerGivingUpIsNoOutage: when the caller's own context ends (a
// cancelled retrieve_tools, the caller's deadline), the provider is not to
// blame and stays in use.
func TestCallerGivingUpIsNoOutage(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	f := newDense(t, srv, Options{QueryTimeout: time.Minute})
	f.upsertAll(t)
	srv.SetFault(embedtest.Hang)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.dense.Search(cancelled, "weather", 3); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: got %v, want context.Canceled", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.dense.Search(short, "weather", 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's deadline: got %v, want context.DeadlineExceeded", err)
	}
	if f.dense.Stats().Down || f.logs.FilterLevelExact(zapcore.WarnLevel).Len() != 0 {
		t.Errorf("a caller giving up marked the provider down or logged a warning")
	}
}

func TestRemove(t *testing.T) {
	f := newDense(t, newServer(t, embedtest.Options{}), Options{})
	f.upsertAll(t)
	f.dense.Remove("weather")
	f.dense.Remove("nonexistent")
	got, err := f.dense.Search(context.Background(), "weather forecast", 10)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(got), "weather:get_forecast") || len(got) != 5 {
		t.Errorf("after Remove: got %v, want the 5 other tools", ids(got))
	}
	// Replacing a server drops its old tools.
	if err := f.dense.Upsert("github", tools["github"][:1]); err != nil {
		t.Fatal(err)
	}
	if s := f.dense.Stats(); s.Tools != 4 {
		t.Errorf("after replacing github's two tools by one: got %d tools, want 4", s.Tools)
	}
}

func TestEmptyAndNil(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	f := newDense(t, srv, Options{})
	got, err := f.dense.Search(context.Background(), "anything", 5)
	if err != nil || got != nil || srv.Requests() != 0 {
		t.Errorf("empty index: got %v, %v after %d requests; want nothing, no error, no request", got, err, srv.Requests())
	}

	var d *Dense
	lexical := []index.Hit{{ID: "a:x"}, {ID: "a:y"}, {ID: "a:z"}}
	out, err := d.Hybrid(context.Background(), "q", lexical, 2)
	if err != nil {
		t.Errorf("nil Dense Hybrid: %v", err)
	}
	if diff := cmp.Diff(lexical[:2], out); diff != "" {
		t.Errorf("nil Dense Hybrid mismatch (-want +got):\n%s", diff)
	}
	out[0].ID = "changed"
	if lexical[0].ID != "a:x" {
		t.Errorf("Hybrid returned the caller's own array")
	}
	if err := d.Upsert("s", tools["fs"]); err != nil || d.Sync(context.Background()) != nil || d.Depth() != 0 {
		t.Errorf("nil Dense: Upsert %v, Depth %d; want no error, 0", err, d.Depth())
	}
	d.Remove("s")
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}

func TestFromConfig(t *testing.T) {
	off, err := FromConfig(&config.Config{}, nil)
	if off != nil || err != nil {
		t.Errorf("no embeddings section: got %v, %v; want nil, nil", off, err)
	}
	srv := newServer(t, embedtest.Options{APIKey: "sk-x", Model: "toy"})
	cfg, err := config.Parse([]byte(`{"data_dir": "`+t.TempDir()+`", "embeddings": {"url": "`+srv.URL+`", "model": "toy", "api_key": "${KEY}"}}`),
		func(k string) (string, bool) { return map[string]string{"KEY": "sk-x"}[k], k == "KEY" })
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Upsert("fs", tools["fs"]); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Search(context.Background(), "remove a document", 1); err != nil || len(got) != 1 {
		t.Errorf("got %v, %v; want one hit", got, err)
	}
	entries, _ := filepath.Glob(filepath.Join(cfg.DataDir, CacheDirName, "*", "*.vec"))
	if len(entries) != 1 {
		t.Errorf("got %d cache entries under data_dir, want 1", len(entries))
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newDense(t, newServer(t, embedtest.Options{}), Options{})
	f.upsertAll(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 10 {
				s := allServers()[i%len(tools)]
				f.dense.Upsert(s, tools[s])
				f.dense.Remove(s)
				f.dense.Upsert(s, tools[s])
			}
		}()
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := f.dense.Search(context.Background(), "send mail", 3); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := f.dense.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := f.dense.Stats(); s.Tools != 6 || s.Pending != 0 {
		t.Errorf("after concurrent updates: got %+v, want 6 tools, none pending", s)
	}
}

// TestRefusedTexts: a provider that refuses a text as too long must not
// stop dense search for the others or be mistaken for an outage.
func TestRefusedTexts(t *testing.T) {
	long := config.ToolMetadata{Name: "summarize", ServerName: "docs", Description: "Summarize a document. " + strings.Repeat("Details. ", 400)}
	tests := []struct {
		name               string
		maxInput           int
		embedded, rejected int
	}{
		{"cut text accepted", 1500, 7, 0},
		{"refused even when cut", 500, 6, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, embedtest.Options{MaxInputBytes: tc.maxInput})
			f := newDense(t, srv, Options{})
			f.dense.Upsert("docs", []config.ToolMetadata{long})
			f.upsertAll(t)
			s := f.dense.Stats()
			if s.Embedded != tc.embedded || s.Rejected != tc.rejected || s.Pending != 0 || s.Down {
				t.Errorf("got %+v, want %d embedded, %d rejected, none pending, not down", s, tc.embedded, tc.rejected)
			}
			if n := f.logs.FilterMessageSnippet("refused").Len(); n != min(tc.rejected, 1) {
				t.Errorf("got %d refusal warnings, want %d", n, min(tc.rejected, 1))
			}
			// A rejected text is not retried by later passes.
			reqs := srv.Requests()
			if err := f.dense.Sync(context.Background()); err != nil || srv.Requests() != reqs {
				t.Errorf("second Sync: got %v after %d requests, want nothing to do", err, srv.Requests()-reqs)
			}
			got, err := f.dense.Search(context.Background(), "send an email", 1)
			if err != nil || len(got) != 1 || got[0].ID != "mail:send_email" {
				t.Errorf("search: got %v, %v; want mail:send_email", ids(got), err)
			}
		})
	}
}

// TestRefusedSetup: when the provider refuses even a trivial input, the
// fault is its setup, which counts as an outage, not as bad tool texts.
func TestRefusedSetup(t *testing.T) {
	srv := newServer(t, embedtest.Options{NoDimensions: true})
	c := newClient(t, ClientOptions{URL: srv.URL, Model: "m", Dimensions: 8})
	d := New(c, Options{})
	t.Cleanup(func() { d.Close() })
	d.Upsert("fs", tools["fs"])
	err := d.Sync(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not support dimensions") {
		t.Errorf("got %v, want the provider's reason", err)
	}
	if s := d.Stats(); !s.Down || s.Rejected != 0 || s.Pending != 1 {
		t.Errorf("got %+v, want down with the tool pending, not rejected", s)
	}
}

// TestOutageFromStart: with the provider down from the first Upsert, no
// tool has a vector, so no search embeds a query; searches must still get
// the queued tools retried once the provider rests no more.
func TestOutageFromStart(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	srv.SetFault(embedtest.Status500)
	passes := make(chan struct{}, 64)
	f := newDense(t, srv, Options{RetryInterval: time.Minute, afterWork: func() { passes <- struct{}{} }})
	pass := func() {
		t.Helper()
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker did not finish a pass within 10s")
		}
	}
	f.dense.Upsert("fs", tools["fs"])
	pass()
	if s := f.dense.Stats(); !s.Down || s.Pending != 1 {
		t.Fatalf("got %+v, want down with 1 pending", s)
	}
	srv.SetFault(embedtest.None)
	f.clock.advance(time.Minute)
	if got, err := f.dense.Search(context.Background(), "erase a document", 1); got != nil || err != nil {
		t.Errorf("nothing embedded yet: got %v, %v; want nothing", got, err)
	}
	pass()
	got, err := f.dense.Search(context.Background(), "erase a document", 1)
	if err != nil || len(got) != 1 || got[0].ID != "fs:delete_file" {
		t.Errorf("after the worker's probe: got %v, %v; want fs:delete_file", ids(got), err)
	}
}

func TestQueryCache(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	f := newDense(t, srv, Options{QueryCacheSize: 2})
	f.upsertAll(t)
	ctx := context.Background()
	search := func(q string) []string {
		t.Helper()
		got, err := f.dense.Search(ctx, q, 3)
		if err != nil {
			t.Fatalf("Search %q: %v", q, err)
		}
		return ids(got)
	}
	reqs := srv.Requests()
	first := search("erase a document")
	if again := search("erase a document"); !slices.Equal(first, again) {
		t.Errorf("cached query: got %v, want %v", again, first)
	}
	if got := srv.Requests() - reqs; got != 1 {
		t.Errorf("same query twice: got %d requests, want 1", got)
	}
	// A cached query is answered during an outage too.
	srv.SetFault(embedtest.Status500)
	if again := search("erase a document"); !slices.Equal(first, again) {
		t.Errorf("cached query during an outage: got %v, want %v", again, first)
	}
	srv.SetFault(embedtest.None)
	// Size 2: two newer queries push the first out.
	search("send mail")
	search("open a bug")
	reqs = srv.Requests()
	search("erase a document")
	if got := srv.Requests() - reqs; got != 1 {
		t.Errorf("evicted query: got %d requests, want 1", got)
	}
}
