package learn_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/learn"
)

func tool(server, name, desc string) config.ToolMetadata {
	return config.ToolMetadata{ServerName: server, Name: name, Description: desc}
}

// rig is a real index over a few servers with a learner feeding it.
type rig struct {
	ix *index.Index
	l  *learn.Learner
}

func newRig(t *testing.T, path string, now func() time.Time) *rig {
	t.Helper()
	st, err := learn.Open(learn.Options{Path: path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.New(index.Options{Learned: st.Terms})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	for server, tools := range map[string][]config.ToolMetadata{
		"weather": {tool("weather", "get_forecast", "Get the weather forecast (temperature, rain, wind) for a city."),
			tool("weather", "get_alerts", "Get active weather alerts for a US state.")},
		"outdoor": {tool("outdoor", "umbrella_shops", "Find shops that sell an umbrella near a city.")},
		"memory": {tool("memory", "create_entities", "Create entities in the knowledge graph."),
			tool("memory", "add_observations", "Add observations to existing entities in the knowledge graph.")},
		"files": {tool("files", "read_file", "Read a file from disk."), tool("files", "write_file", "Write a file to disk.")},
	} {
		if err := ix.Upsert(server, tools); err != nil {
			t.Fatal(err)
		}
	}
	return &rig{ix: ix, l: &learn.Learner{Store: st, Index: ix}}
}

func (r *rig) search(t *testing.T, session, q string) []index.Hit {
	t.Helper()
	hits, err := r.ix.Search(context.Background(), q, 5)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	if session != "" {
		r.l.Searched(session, q, ids)
	}
	return hits
}

func rankOf(hits []index.Hit, id string) int {
	return slices.IndexFunc(hits, func(h index.Hit) bool { return h.ID == id })
}

func TestLearnedWordsFindTheToolNextTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "learned.json")
	r := newRig(t, path, nil)
	const want = "weather:get_forecast"
	if hits := r.search(t, "", "should I carry a parasol tomorrow"); rankOf(hits, want) == 0 {
		t.Fatalf("the forecast already leads an unlearned search: %v", hits)
	}

	// The missed search, a second one in the tool's own words, the call.
	r.search(t, "s1", "should I carry a parasol tomorrow")
	r.search(t, "s1", "weather forecast")
	words := r.l.Called("s1", want, true)
	var terms []string
	for _, w := range words {
		terms = append(terms, w.Term)
	}
	if !slices.Contains(terms, "parasol") || slices.Contains(terms, "weather") {
		t.Errorf("taught %v, want the missed search's words the tool lacks (parasol), not its own (weather)", terms)
	}

	// Another session's later phrasing finds it first, and says why.
	hits := r.search(t, "", "is a parasol needed")
	if rankOf(hits, want) != 0 || !slices.Contains(hits[0].Learned, "parasol") {
		t.Errorf("later phrasing: %+v, want %s first through the learned word parasol", hits, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file %v %v, want 0600", fi, err)
	}

	// What was learned survives a restart; forgetting it undoes the lesson.
	r2 := newRig(t, path, nil)
	if hits := r2.search(t, "", "is a parasol needed"); rankOf(hits, want) != 0 {
		t.Errorf("after a restart: %v, want %s first", hits, want)
	}
	if ok, err := r2.l.Store.Forget(want); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	if err := r2.ix.Relearn(want); err != nil {
		t.Fatal(err)
	}
	if hits := r2.search(t, "", "is a parasol needed"); rankOf(hits, want) == 0 {
		t.Errorf("after forget: %v, want the lesson gone", hits)
	}
}

func TestLearnedRanksBelowOwnWordsAndExactNames(t *testing.T) {
	r := newRig(t, "", nil)
	// Teach get_forecast the word "umbrella" (umbrella_shops has it).
	for i, s := range []string{"a", "b", "c"} {
		r.search(t, s, "umbrella tomorrow")
		r.search(t, s, "weather forecast")
		if r.l.Called(s, "weather:get_forecast", true) == nil {
			t.Fatalf("episode %d taught nothing", i)
		}
	}
	hits := r.search(t, "", "umbrella")
	if rankOf(hits, "outdoor:umbrella_shops") != 0 || rankOf(hits, "weather:get_forecast") < 0 {
		t.Errorf("got %v, want the tool that says umbrella first and the learned one after it", hits)
	}
	if hits := r.search(t, "", "umbrella read_file"); rankOf(hits, "files:read_file") != 0 {
		t.Errorf("got %v, want the exact name first", hits)
	}
}

func TestEpisodesThatTeachNothing(t *testing.T) {
	r := newRig(t, "", nil)
	const want = "weather:get_forecast"
	cases := map[string]func(s string) []learn.Word{
		"a failed call": func(s string) []learn.Word {
			r.search(t, s, "parasol weather forecast")
			return r.l.Called(s, want, false)
		},
		"a tool the answer did not show": func(s string) []learn.Word {
			r.search(t, s, "parasol knowledge graph")
			return r.l.Called(s, want, true)
		},
		"a query naming the tool": func(s string) []learn.Word {
			r.search(t, s, "parasol get_forecast")
			return r.l.Called(s, want, true)
		},
		"a long hunt": func(s string) []learn.Word {
			for _, q := range []string{"parasol", "sunshade", "rain gear", "sky", "weather forecast"} {
				r.search(t, s, q)
			}
			return r.l.Called(s, want, true)
		},
		"no search at all": func(s string) []learn.Word { return r.l.Called(s, want, true) },
	}
	for name, run := range cases {
		if got := run(name); got != nil {
			t.Errorf("%s taught %v", name, got)
		}
	}
	// A described tool teaches even when the last answer did not show it.
	r.search(t, "d", "parasol")
	r.l.Described("d", want)
	if r.l.Called("d", want, true) == nil {
		t.Error("an episode that described the tool taught nothing")
	}
}

func TestHeldWordsNeedTwoEpisodes(t *testing.T) {
	r := newRig(t, "", nil)
	const want = "memory:create_entities"
	words := r.l.Words(want, []string{"remember that Alice has 3 cats"})
	held := map[string]bool{}
	for _, w := range words {
		held[w.Term] = w.Hold
	}
	if !held["alic"] && !held["alice"] || !held["3"] || held["cat"] {
		t.Errorf("words %+v: want the name and the number held back, cat not", words)
	}
	st := r.l.Store
	if _, err := st.Teach(want, words); err != nil {
		t.Fatal(err)
	}
	if got := st.Terms(want); slices.Contains(got, "3") || !slices.Contains(got, "cat") {
		t.Errorf("after one episode: %v, want cat and not 3", got)
	}
	if _, err := st.Teach(want, []learn.Word{{Term: "3", Hold: true}}); err != nil {
		t.Fatal(err)
	}
	if got := st.Terms(want); !slices.Contains(got, "3") {
		t.Errorf("after two episodes: %v, want 3 too", got)
	}
}

func TestEvidenceFadesAndIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st, err := learn.Open(learn.Options{Now: clock, MaxTermsPerTool: 3, MaxTools: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		st.Teach("a:x", []learn.Word{{Term: "rain"}})
	}
	if got := st.Terms("a:x"); len(got) != learn.MaxWeight {
		t.Errorf("five episodes weigh %d, want the cap %d", len(got), learn.MaxWeight)
	}
	st.Teach("a:x", []learn.Word{{Term: "w1"}, {Term: "w2"}, {Term: "w3"}})
	if got := slices.Compact(st.Terms("a:x")); len(got) != 3 || !slices.Contains(got, "rain") {
		t.Errorf("bounded to %v, want 3 words keeping the strongest (rain)", got)
	}
	now = now.Add(learn.DefaultHalfLife * 2)
	if got := st.Terms("a:x"); slices.Contains(got, "w1") || !slices.Contains(got, "rain") {
		t.Errorf("after two half-lives: %v, want one-episode words faded, rain still there", got)
	}
	st.Teach("b:y", []learn.Word{{Term: "snow"}})
	now = now.Add(time.Hour)
	st.Teach("c:z", []learn.Word{{Term: "hail"}})
	if list := st.List(); len(list) != 2 || list["a:x"] != nil {
		t.Errorf("kept %v, want the two tools taught last", list)
	}
}

// gatedIndex is the real index whose Relearn waits for gate: it shows who
// waits for a lesson being indexed.
type gatedIndex struct {
	*index.Index
	gate chan struct{}
}

func (g gatedIndex) Relearn(id string) error {
	<-g.gate
	return g.Index.Relearn(id)
}

// CalledLater answers the call without waiting for its lesson (stored and
// indexed by the Learner's worker); the next search's Refresh waits for
// it, so the search finds what the call taught; Close teaches whatever is
// still pending.
func TestCalledLater(t *testing.T) {
	r := newRig(t, filepath.Join(t.TempDir(), "learned.json"), nil)
	gate := make(chan struct{})
	r.l.Index = gatedIndex{Index: r.ix, gate: gate}
	t.Cleanup(r.l.Close)
	const want = "weather:get_forecast"
	r.search(t, "s1", "should I carry a parasol tomorrow")
	r.search(t, "s1", "weather forecast")
	r.l.CalledLater("s1", want, true) // returns while the worker waits at the gate

	refreshed := make(chan struct{})
	go func() {
		r.l.Refresh()
		close(refreshed)
	}()
	select {
	case <-refreshed:
		t.Fatal("Refresh returned while the lesson was still being indexed; a search would miss it")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	<-refreshed
	if hits := r.search(t, "", "is a parasol needed"); rankOf(hits, want) != 0 {
		t.Errorf("after Refresh: %+v, want %s first through the learned word", hits, want)
	}

	// A lesson still pending at Close is taught before Close returns.
	r.search(t, "s2", "will it drizzle in Oslo")
	r.search(t, "s2", "weather forecast")
	r.l.CalledLater("s2", want, true)
	r.l.Close()
	if terms := r.l.Store.Terms(want); !slices.Contains(terms, "drizzl") {
		t.Errorf("after Close the tool's learned words are %v, want drizzl (drizzle, stemmed) among them", terms)
	}
	r.l.CalledLater("s3", want, true) // after Close: taught at once, no worker
}

// Two stores on one file, each opened before the other taught (a serving
// mcproxy and `mcproxy learned forget`, or two servers on one data dir):
// each write adds to what the other wrote instead of replacing it with its
// own older copy.
func TestStoresOnOneFileKeepEachOthersEpisodes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), learn.FileName)
	open := func() *learn.Store {
		st, err := learn.Open(learn.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := open(), open()
	if _, err := a.Teach("weather:get_forecast", []learn.Word{{Term: "umbrella"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Teach("files:read_file", []learn.Word{{Term: "cat"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Teach("weather:get_forecast", []learn.Word{{Term: "umbrella"}}); err != nil {
		t.Fatal(err)
	}
	got := open().List()
	if ev := got["weather:get_forecast"]; len(ev) != 1 || ev[0].Episodes != 2 {
		t.Errorf("weather:get_forecast: got %+v, want umbrella taught twice (once by each store)", ev)
	}
	if len(got["files:read_file"]) != 1 {
		t.Errorf("files:read_file: got %+v, want cat", got["files:read_file"])
	}
	// Forget on a store that never saw the tool still forgets it.
	if had, err := a.Forget("files:read_file"); err != nil || !had {
		t.Errorf("Forget of a tool another store taught: got %v, %v; want true", had, err)
	}
	if got := open().List(); got["files:read_file"] != nil || got["weather:get_forecast"] == nil {
		t.Errorf("after Forget: got %v, want only weather:get_forecast", got)
	}
}
