package index

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestMentionedServers(t *testing.T) {
	keys := map[string][]string{}
	for _, s := range []string{"desktop-commander", "mcp-deepwiki", "git", "yahoo-finance", "Ant Design Components", "fs"} {
		for _, k := range serverKeys(s) {
			keys[k] = append(keys[k], s)
		}
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"read a file with desktop commander", []string{"desktop-commander"}},
		{"explain the repo using deepwiki", []string{"mcp-deepwiki"}},
		{"git: show the log", []string{"git"}},
		{"Yahoo Finance quote for AAPL", []string{"yahoo-finance"}},
		{"ant design components date picker", []string{"Ant Design Components"}},
		{"digital signature", nil},     // "git" inside a word is not a mention
		{"fs read a file", nil},        // keys under three characters never match
		{"desktop and commander", nil}, // the words must be consecutive
		{"deepwiki and git", []string{"git", "mcp-deepwiki"}},
	}
	for _, tc := range tests {
		got := mentionedServers(tc.query, keys)
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" && !(len(tc.want) == 0 && len(got) == 0) {
			t.Errorf("mentionedServers(%q): got %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestQuotedTools(t *testing.T) {
	names := map[string][]string{
		"git_log":    {"git:git_log"},
		"read_file":  {"desktop-commander:read_file", "filesystem:read_file"},
		"close":      {"browser:close"},
		"getstories": {"hackernews:getStories"},
		"get":        {"weather:get"},
	}
	ids := map[string]string{"weather:get": "weather:get", "git:git_log": "git:git_log", "browser:close": "browser:close"}
	tests := []struct {
		query string
		want  []string
	}{
		{"run git_log please", []string{"git:git_log"}},
		{"`read_file`, then summarize", []string{"desktop-commander:read_file", "filesystem:read_file"}},
		{"call getStories", []string{"hackernews:getStories"}},
		{"close the browser", nil},                             // an ordinary word is not a quote
		{"use weather:get for Paris", []string{"weather:get"}}, // a full id always is
		{"get the weather", nil},
	}
	for _, tc := range tests {
		got := quotedTools(tc.query, names, ids)
		if !slices.Equal(got, tc.want) {
			t.Errorf("quotedTools(%q): got %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestServerMention checks that naming a server puts its tools first even
// when another server's tool matches the remaining words better.
func TestServerMention(t *testing.T) {
	tools := []config.ToolMetadata{
		tool("notes", "save_note", "Save a note with a title and a body.", ""),
		tool("notes", "list_notes", "List saved notes.", ""),
		tool("scratch-pad", "put", "Keep some text for later.", ""),
	}
	const q = "scratch pad: save a note"
	off := DefaultFeatures()
	off.ServerMention = false
	without := newIndex(t, Options{Features: &off})
	load(t, without, tools)
	if got := mustSearch(t, without, q, 3); got[0].ID != "notes:save_note" {
		t.Fatalf("without server mention: got %v first, want notes:save_note (the test needs a query the lever changes)", ids(got))
	}
	with := newIndex(t, Options{})
	load(t, with, tools)
	if got := mustSearch(t, with, q, 3); got[0].ID != "scratch-pad:put" {
		t.Errorf("with server mention: got %v, want scratch-pad:put first", ids(got))
	}
}

func TestExactNameFirst(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	for _, tc := range []struct{ query, want string }{
		{"git_create_branch", "git:git_create_branch"},
		{"list branches with git_log", "git:git_log"},
		{"weather:get", "weather:get"},
		{"closeIssue number 7", "issues:closeIssue"},
	} {
		got := mustSearch(t, ix, tc.query, 3)
		if len(got) == 0 || got[0].ID != tc.want {
			t.Errorf("Search(%q): got %v, want %s first", tc.query, ids(got), tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	var mu sync.Mutex // the expander runs on the index's builder goroutine
	var asked []string
	var known, unknown bool
	expand := func(terms []string, inIndex func(string) bool) []WeightedTerm {
		mu.Lock()
		defer mu.Unlock()
		asked = append([]string(nil), terms...)
		known, unknown = inIndex("directori"), inIndex("folder")
		return []WeightedTerm{{Term: "directori", Weight: 0.5}, {Term: "folder", Weight: 0.9}}
	}
	// The synonym lexicon would bridge "folder" too: off, to see expansion.
	noSyn := DefaultFeatures()
	noSyn.Synonyms = false
	plain := newIndex(t, Options{Features: &noSyn})
	load(t, plain, smallSet)
	if got := mustSearch(t, plain, "folders", 3); len(got) != 0 {
		t.Fatalf("without expansion: got %v, want no hits (no tool says folder)", ids(got))
	}
	var vocabs int
	var last []string
	expander := func(vocab []string) ExpandFunc {
		mu.Lock()
		defer mu.Unlock()
		vocabs++
		last = vocab
		if !slices.Contains(vocab, "directori") {
			t.Errorf("expander got a vocabulary without directori (%d terms)", len(vocab))
		}
		return expand
	}
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return vocabs
	}
	ix := newIndex(t, Options{Expander: expander, Features: &noSyn})
	load(t, ix, smallSet)
	ix.expWG.Wait() // the background build after the last Upsert
	built := calls()
	if built == 0 {
		t.Fatal("got no expander built after Upsert, want one built in the background")
	}
	got := mustSearch(t, ix, "folders", 3)
	mu.Lock()
	if !slices.Equal(asked, []string{"folder"}) {
		t.Errorf("expand got terms %v, want the analyzed query [folder]", asked)
	}
	if !known || unknown {
		t.Errorf("inIndex: got directori %v, folder %v; want true, false", known, unknown)
	}
	mu.Unlock()
	if len(got) == 0 || !strings.Contains(got[0].Name, "Directory") && got[0].Name != "move_file" {
		t.Errorf("with expansion: got %v, want a directory tool first", ids(got))
	}
	mustSearch(t, ix, "folders", 3)
	if n := calls(); n != built {
		t.Errorf("got the expander called %d more times by searches, want none (built in the background)", n-built)
	}

	extra := []config.ToolMetadata{tool("extra", "noop", "Do nothing.", "")}
	if err := ix.Upsert("extra", extra); err != nil {
		t.Fatal(err)
	}
	ix.expWG.Wait()
	if n := calls(); n != built+1 {
		t.Errorf("got the expander called %d times after the vocabulary changed, want once", n-built)
	}
	mu.Lock()
	if !slices.Contains(last, "noop") {
		t.Errorf("expander's last vocabulary lacks the new tool's noop (%d terms)", len(last))
	}
	mu.Unlock()
	mustSearch(t, ix, "folders", 3)
	// The same tools again: the vocabulary is unchanged, so is the
	// expansion function (and whatever it has cached).
	if err := ix.Upsert("extra", extra); err != nil {
		t.Fatal(err)
	}
	mustSearch(t, ix, "folders", 3)
	ix.expWG.Wait()
	if n := calls(); n != built+1 {
		t.Errorf("got the expander called %d times for an unchanged vocabulary, want 0", n-built-1)
	}

	off := noSyn
	off.ExpansionWeight = 0
	ix0 := newIndex(t, Options{Expander: expander, Features: &off})
	load(t, ix0, smallSet)
	if got := mustSearch(t, ix0, "folders", 3); len(got) != 0 {
		t.Errorf("ExpansionWeight 0: got %v, want no hits", ids(got))
	}
}

// TestExpandRightAfterUpsert searches while the background build may still
// run: whichever of the search and the builder builds the expansion
// function, the search must use the vocabulary the Upsert left.
func TestExpandRightAfterUpsert(t *testing.T) {
	expander := func(vocab []string) ExpandFunc {
		return func(terms []string, inIndex func(string) bool) []WeightedTerm {
			if slices.Contains(terms, "umbrella") && slices.Contains(vocab, "forecast") {
				return []WeightedTerm{{Term: "forecast", Weight: 0.9, From: "umbrella"}}
			}
			return nil
		}
	}
	ix := newIndex(t, Options{Expander: expander})
	for i := range 20 {
		if got := mustSearch(t, ix, "umbrella", 3); len(got) != 0 {
			t.Fatalf("round %d, before the weather server: got %v, want no hits", i, ids(got))
		}
		w := []config.ToolMetadata{tool("weather", "get_forecast", "Get the weather forecast for a city.", "")}
		if err := ix.Upsert("weather", w); err != nil {
			t.Fatal(err)
		}
		if got := mustSearch(t, ix, "umbrella", 3); len(got) != 1 || got[0].ID != "weather:get_forecast" {
			t.Fatalf("round %d, right after Upsert: got %v, want weather:get_forecast", i, ids(got))
		}
		if err := ix.Remove("weather"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCloseWaitsForExpanderBuild closes the index while the background
// build runs: Close returns only after the build is over, so no goroutine
// outlives the index.
func TestCloseWaitsForExpanderBuild(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	var done atomic.Bool
	var once sync.Once
	expander := func(vocab []string) ExpandFunc {
		once.Do(func() { close(started) })
		<-release
		done.Store(true)
		return nil
	}
	ix, err := New(Options{Expander: expander})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert("weather", []config.ToolMetadata{tool("weather", "get_forecast", "Weather forecast.", "")}); err != nil {
		t.Fatal(err)
	}
	<-started
	closed := make(chan error)
	go func() { closed <- ix.Close() }()
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !done.Load() {
		t.Error("Close returned before the expander build finished")
	}
}

func TestVocabularyFollowsUpserts(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	if v := ix.Vocabulary(); !slices.Contains(v, "forecast") || !slices.IsSorted(v) {
		t.Fatalf("got vocabulary without forecast or unsorted (%d terms)", len(v))
	}
	if err := ix.Remove("weather"); err != nil {
		t.Fatal(err)
	}
	if v := ix.Vocabulary(); slices.Contains(v, "forecast") {
		t.Errorf("after removing weather: vocabulary still holds forecast")
	}
	if !slices.Contains(ix.Vocabulary(), "branch") {
		t.Errorf("after removing weather: vocabulary lost git's branch")
	}
}

// TestLookupSurvivesReopen: the tables behind exact names, mentions,
// coverage and expansion are rebuilt from an on-disk index's statistics.
func TestLookupSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	ix, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	load(t, ix, smallSet)
	want := mustSearch(t, ix, "git_log and a weather forecast", 5)
	vocab := ix.Vocabulary()
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	again := newIndex(t, Options{Dir: dir})
	if n, _ := again.Count(); n != len(smallSet) {
		t.Fatalf("reopened index holds %d tools, want %d (it was rebuilt instead of reused)", n, len(smallSet))
	}
	if diff := cmp.Diff(want, mustSearch(t, again, "git_log and a weather forecast", 5)); diff != "" {
		t.Errorf("search after reopen differs (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(vocab, again.Vocabulary()); diff != "" {
		t.Errorf("vocabulary after reopen differs (-before +after):\n%s", diff)
	}
}

func TestWeak(t *testing.T) {
	ix := newIndex(t, Options{})
	load(t, ix, smallSet)
	strong := mustSearch(t, ix, "weather forecast for a city", 1)
	if len(strong) == 0 || strong[0].Weak() {
		t.Errorf("strong query: got %+v, want a hit that is not weak", strong)
	}
	weak := mustSearch(t, ix, "forecast quantum entanglement spectroscopy lattice", 1)
	if len(weak) == 0 || !weak[0].Weak() {
		t.Errorf("weak query: got %+v, want a weak hit (coverage under %v)", weak, WeakCoverage)
	}
}

func TestCJKBigrams(t *testing.T) {
	tools := []config.ToolMetadata{
		tool("trends", "weibo", "获取微博热搜榜", ""),
		tool("search", "engine", "热门搜索引擎", ""),
	}
	ix := newIndex(t, Options{})
	load(t, ix, tools)
	if got := mustSearch(t, ix, "热搜", 5); !slices.Equal(ids(got), []string{"trends:weibo"}) {
		t.Errorf("with bigrams: got %v, want only trends:weibo (the other tool has 热 and 搜 apart)", ids(got))
	}
	off := DefaultFeatures()
	off.CJKBigrams = false
	single := newIndex(t, Options{Features: &off})
	load(t, single, tools)
	if got := mustSearch(t, single, "热搜", 5); len(got) != 2 {
		t.Errorf("single characters: got %v, want both tools", ids(got))
	}
}

func TestFeaturesValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Features)
		want string
	}{
		{"stemmer", func(f *Features) { f.Stemmer = "lancaster" }, `invalid stemmer "lancaster"`},
		{"no fields", func(f *Features) { f.Fields = nil }, "no fields"},
		{"field", func(f *Features) { f.Fields = []FieldBoost{{Field: "server", Boost: 1}} }, `invalid field "server"`},
		{"boost", func(f *Features) { f.Fields = []FieldBoost{{Field: "all", Boost: 0}} }, "boost 0"},
		{"weight", func(f *Features) { f.ServerPrior = -1 }, "negative weight"},
	} {
		f := DefaultFeatures()
		tc.mod(&f)
		_, err := New(Options{Features: &f})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestNewDoesNotKeepCallersFeatures(t *testing.T) {
	f := DefaultFeatures()
	ix := newIndex(t, Options{Features: &f})
	f.Fields[0].Boost = 100
	if ix.features.Fields[0].Boost == 100 {
		t.Error("changing the caller's Features after New changed the index")
	}
}
