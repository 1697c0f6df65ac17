package index

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinSynonymsParse(t *testing.T) {
	groups, err := parseSynonyms(builtinSynonyms)
	if err != nil {
		t.Fatalf("the embedded lexicon: %v", err)
	}
	if len(groups) < 50 {
		t.Fatalf("got %d groups from the embedded lexicon, want the whole file (50 or more)", len(groups))
	}
	// Every word of the lexicon must reach the index as one term, or the
	// line is dead weight (a stop word, a phrase).
	ix := newIndex(t, Options{})
	for _, g := range groups {
		for _, w := range g {
			if n := len(ix.analyzer.Analyze([]byte(w))); n != 1 {
				t.Errorf("lexicon word %q analyzes to %d terms, want 1", w, n)
			}
		}
	}
}

func TestParseSynonyms(t *testing.T) {
	got, err := parseSynonyms("# comment\n\n folder , directory,dir\nk8s,kubernetes\n")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"folder", "directory", "dir"}, {"k8s", "kubernetes"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"lonely\n", "a,\n", " , ,\n"} {
		if _, err := parseSynonyms(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseSynonyms(%q): got error %v, want one naming line 1", bad, err)
		}
	}
}

func TestSynonymsBridgeVocabulary(t *testing.T) {
	on := newIndex(t, Options{})
	load(t, on, smallSet)
	offF := DefaultFeatures()
	offF.Synonyms = false
	off := newIndex(t, Options{Features: &offF})
	load(t, off, smallSet)

	// No tool says "folder" or "erase"; the lexicon links them to words
	// tools do use.
	for _, tc := range []struct{ query, want string }{
		{"what is in this folder", "fs:listDirectory"},
		{"make a fresh branch", "git:git_create_branch"},
	} {
		if got := mustSearch(t, on, tc.query, 3); len(got) == 0 || got[0].ID != tc.want {
			t.Errorf("with synonyms, Search(%q): got %v, want %s first", tc.query, ids(got), tc.want)
		}
		if got := mustSearch(t, off, tc.query, 3); len(got) > 0 && got[0].ID == tc.want {
			t.Errorf("without synonyms, Search(%q): got %s first already; the case does not test the lexicon", tc.query, tc.want)
		}
	}

	// A synonym never outweighs the word itself: a tool using the query's
	// own word ranks above one using only its synonym.
	got := mustSearch(t, on, "list directory entries", 3)
	if got[0].ID != "fs:listDirectory" {
		t.Errorf("Search(list directory entries): got %v, want fs:listDirectory first", ids(got))
	}

	// Coverage counts a query word as held when a synonym is.
	hits := mustSearch(t, on, "folder", 5)
	if len(hits) == 0 || hits[0].Coverage < 0.99 {
		t.Errorf("Search(folder): got %+v, want a first hit with coverage 1 (directory is a synonym)", hits)
	}
}

func TestUserSynonyms(t *testing.T) {
	ix := newIndex(t, Options{Synonyms: [][]string{{"umbrella", "rain"}}})
	load(t, ix, smallSet)
	if got := mustSearch(t, ix, "do I need an umbrella", 3); len(got) == 0 || got[0].ID != "weather:get-forecast" {
		t.Errorf("with a user group umbrella,rain: got %v, want weather:get-forecast first", ids(got))
	}
	plain := newIndex(t, Options{})
	load(t, plain, smallSet)
	if got := mustSearch(t, plain, "do I need an umbrella", 3); len(got) != 0 {
		t.Errorf("without the user group: got %v, want no hits (no tool says umbrella)", ids(got))
	}

	odd := newIndex(t, Options{Synonyms: [][]string{{"pr", "pull request", "pull_request", "the", "merge"}}})
	if got, want := odd.SkippedSynonyms(), []string{"pull request", "pull_request", "the"}; !slices.Equal(got, want) {
		t.Errorf("SkippedSynonyms: got %q, want %q", got, want)
	}
	if got := odd.lex.others["pr"]; !slices.Contains(got, "merg") {
		t.Errorf("synonyms of pr: got %q, want merg (the group's one-word member)", got)
	}
	if got := ix.SkippedSynonyms(); len(got) != 0 {
		t.Errorf("SkippedSynonyms with one-word groups: got %q, want none", got)
	}

	if _, err := New(Options{Synonyms: [][]string{{"k8s", "kubernetes"}, {"alone"}}}); err == nil || !strings.Contains(err.Error(), "synonym group 2") {
		t.Errorf("New with a one-word group: got error %v, want one naming synonym group 2", err)
	}
}

func TestSynonymsOf(t *testing.T) {
	ix := newIndex(t, Options{Synonyms: [][]string{{"folders", "directory", "dir"}}})
	inIndex := func(t string) bool { return t == "directori" || t == "folder" }
	got := ix.lex.others.of([]string{"folder", "list"}, inIndex)
	if !slices.Contains(got["folder"], "directori") || slices.Contains(got["folder"], "dir") {
		t.Errorf("of(folder): got %q, want directori (in the index) and not dir (not in it)", got["folder"])
	}
	// A synonym that is itself a query word is not added again.
	if got := ix.lex.others.of([]string{"folder", "directori"}, inIndex); len(got["folder"]) != 0 {
		t.Errorf("of(folder directori): got %q for folder, want none (directori is in the query)", got["folder"])
	}
}

func TestLexiconGroups(t *testing.T) {
	ix := newIndex(t, Options{})
	lx := newLexicon(ix.analyzer, [][]string{{"folder", "directory", "dir"}, {"the", "a"}, {"folders", "Folder"}})
	if got := lx.members["g0"]; !slices.Equal(got, []string{"dir", "directori", "folder"}) {
		t.Errorf("group g0: got %q, want the analyzed terms sorted", got)
	}
	// Stop words leave nothing; two spellings of one term leave one: no group.
	if _, ok := lx.members["g1"]; ok {
		t.Error("a group of stop words was kept")
	}
	if _, ok := lx.members["g2"]; ok {
		t.Error("a group whose words analyze to one term was kept")
	}
	if got := lx.synText(ix.analyzer.Analyze([]byte("List a directory; directories nest; read a file"))); got != "g0 g0" {
		t.Errorf("synText: got %q, want one group id per occurrence of a group's term", got)
	}
	held := func(t string) bool { return t == "directori" || t == "folder" }
	if got := lx.groupsOf([]string{"folder", "read"}, held); !slices.Equal(got["folder"], []string{"g0"}) || len(got["read"]) != 0 {
		t.Errorf("groupsOf: got %v, want g0 for folder only", got)
	}
	// A group none of whose other terms the index holds is not searched.
	onlySelf := func(t string) bool { return t == "folder" }
	if got := lx.groupsOf([]string{"folder"}, onlySelf); len(got) != 0 {
		t.Errorf("groupsOf with no synonym held: got %v, want none", got)
	}
	if other := newLexicon(ix.analyzer, [][]string{{"folder", "directory"}}); other.hash == lx.hash {
		t.Error("two different lexicons share a hash")
	}
}

// TestOnDiskSynonymsChange: documents carry their synonym groups, so an
// on-disk index built with other groups is rebuilt, never searched with
// stale group ids.
func TestOnDiskSynonymsChange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	first := newIndex(t, Options{Dir: dir, Synonyms: [][]string{{"dossier", "directory"}}})
	load(t, first, smallSet)
	if got := mustSearch(t, first, "dossier", 3); len(got) == 0 || got[0].ID != "fs:listDirectory" {
		t.Fatalf("with [dossier directory]: got %v, want fs:listDirectory first", ids(got))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	same := newIndex(t, Options{Dir: dir, Synonyms: [][]string{{"dossier", "directory"}}})
	if got := mustCount(t, same); got != len(smallSet) {
		t.Errorf("reopened with the same groups: got %d documents, want %d kept", got, len(smallSet))
	}
	if err := same.Close(); err != nil {
		t.Fatal(err)
	}
	changed := newIndex(t, Options{Dir: dir, Synonyms: [][]string{{"binder", "directory"}}})
	if got := mustCount(t, changed); got != 0 {
		t.Errorf("reopened with other groups: got %d documents, want a rebuilt (empty) index", got)
	}
	load(t, changed, smallSet)
	if got := mustSearch(t, changed, "binder", 3); len(got) == 0 || got[0].ID != "fs:listDirectory" {
		t.Errorf("with [binder directory]: got %v, want fs:listDirectory first", ids(got))
	}
	if got := mustSearch(t, changed, "dossier", 3); len(got) != 0 {
		t.Errorf("dossier after its group was removed: got %v, want no hits", ids(got))
	}
}
