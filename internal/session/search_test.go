package session

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// hitCall is a search answer's line: the call that reads from the hit, and
// the line itself.
var hitCall = regexp.MustCompile(`(?m)^read_archive (\{[^}]*\}): (.*)$`)

// A search finds a word that is no longer in view in the archive that holds
// it, and the call it names reads that archive from the hit's line.
func TestSearchArchiveFindsWhatLeftTheView(t *testing.T) {
	t.Parallel()
	h := openHost(t, testOptions(t), "s")
	rng := newRand(11)
	call(t, h, "fs:read_conf", "settings loaded\nthe parser lives in pkg/parse_config.go line 40\nend")
	call(t, h, "fs:read_more", "another line naming parse_config and validate_schema together\nunrelated")
	nudge := fillUntilNudge(t, h, rng).Nudge
	out := compress(t, h, compressArgs(rangesOf(nudge)))
	if out.IsError || len(out.Blocks) == 0 {
		t.Fatalf("compress: %s", out.Text)
	}
	view, err := h.Peek(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range view.View {
		if strings.Contains(m.Text, "parse_config") {
			t.Fatalf("the word is still in view; the test needs it archived")
		}
	}

	page := search(t, h, "parse_config validate_schema")
	hits := hitCall.FindAllStringSubmatch(page.Text, -1)
	if len(hits) != 2 {
		t.Fatalf("got %d hits, want the 2 archived lines holding the words:\n%s", len(hits), page.Text)
	}
	if !strings.Contains(hits[0][2], "validate_schema") {
		t.Errorf("first hit %q: want the line holding both words first", hits[0][2])
	}
	for _, x := range hits {
		a, err := ParseReadArchiveArgs([]byte(x[1]))
		if err != nil {
			t.Fatalf("the hit's call %s: %v", x[1], err)
		}
		p, err := h.ReadArchive(context.Background(), a)
		if err != nil {
			t.Fatalf("the hit's call %s: %v", x[1], err)
		}
		if line := strings.SplitN(p.Text, "\n", 2)[0]; line != x[2] {
			t.Errorf("the hit's call %s reads from %q, want the hit's line %q", x[1], line, x[2])
		}
	}

	// A word no archive holds is said to be missing, by name.
	page = search(t, h, "parse_config no_such_word_zz")
	if !strings.Contains(page.Text, `no archived line holds "no_such_word_zz"`) {
		t.Errorf("a missing word is not named:\n%s", page.Text)
	}
	if page = search(t, h, "no_such_word_zz"); !strings.Contains(page.Text, "Try another word") || hitCall.MatchString(page.Text) {
		t.Errorf("a search finding nothing: got\n%s", page.Text)
	}
}

// The original of a result cut for size is searched too: the part of it
// the view no longer holds is found and read back.
func TestSearchArchiveFindsTheCutPartOfAResult(t *testing.T) {
	t.Parallel()
	opts := testOptions(t)
	opts.MaxResultTokens = 1000
	h := openHost(t, opts, "s")
	rng := newRand(5)
	original := words(rng, 6000) + "\nthe middle holds needle_in_the_cut here\n" + words(rng, 6000)
	cut := call(t, h, "fs:read_big", original).Recorded[0].Text
	if strings.Contains(cut, "needle_in_the_cut") {
		t.Fatalf("the cut result still holds the word; the test needs it cut")
	}
	page := search(t, h, "needle_in_the_cut")
	hits := hitCall.FindAllStringSubmatch(page.Text, -1)
	if len(hits) != 1 || !strings.Contains(hits[0][1], `"ref":"m00002"`) {
		t.Fatalf("got\n%s\nwant one hit in the cut result m00002", page.Text)
	}
}

// A search is one call alone, and needs a word.
func TestSearchArchiveErrors(t *testing.T) {
	t.Parallel()
	h := openHost(t, testOptions(t), "s")
	call(t, h, "fs:a", "alpha")
	if _, err := ParseReadArchiveArgs([]byte(`{"query":"x","block":"b1"}`)); err == nil || !strings.Contains(err.Error(), "send it alone") {
		t.Errorf("query with a block: got %v, want it refused with how to send it", err)
	}
	if _, err := ParseReadArchiveArgs([]byte(`{"query":7}`)); err == nil || !strings.Contains(err.Error(), `"query" must be a string`) {
		t.Errorf("query not a string: got %v", err)
	}
	if _, err := h.SearchArchive(context.Background(), "   "); err == nil || !strings.Contains(err.Error(), "needs a word") {
		t.Errorf("empty query: got %v", err)
	}
	if p := search(t, h, "alpha"); !strings.Contains(p.Text, "nothing is archived") {
		t.Errorf("nothing archived: got %q", p.Text)
	}
}

func search(t *testing.T, h *Host, q string) Page {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"query": q})
	a, err := ParseReadArchiveArgs(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.ReadArchive(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if p.Note != "" {
		t.Errorf("a search answer has a page note %q", p.Note)
	}
	return p
}
