package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// A session is counted with the tokenizer it was made with: the frozen
// token figures of its refs came from it, so a later open, Inspect and
// Rebuild under a configuration that names another tokenizer replay it
// with the saved one, and find nothing to repair.
func TestTokenizerSavedWithTheSession(t *testing.T) {
	cl, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	o2, err := tokens.New("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	made := testOptions(t)
	made.Tokenizer, made.Count = "cl100k_base", cl.Count
	// Texts the two encodings count differently, so a replay with the
	// wrong one freezes other figures.
	texts := []string{
		"Die Verarbeitung natürlicher Sprache über Tokenizer: Überraschungen garantiert, ½ ¾ ∑ ∫.",
		strings.Repeat("función análisis ", 40),
		"日本語のテキストはトークン化が異なります。" + strings.Repeat("測定", 30),
	}
	h := openHost(t, made, "s")
	var ids []string
	for _, text := range texts {
		ids = append(ids, call(t, h, "fs:read", text).Recorded[0].ID)
	}
	want := map[string]MessageRef{}
	for _, id := range ids {
		ref, ok := h.Ref(id)
		if !ok {
			t.Fatalf("no ref for %s", id)
		}
		want[id] = ref
	}
	differ := false
	for _, text := range texts {
		differ = differ || cl.Count(text) != o2.Count(text)
	}
	if !differ {
		t.Fatal("the texts count the same in both encodings; the test would prove nothing")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(made.Dir, "s", SessionFile))
	if err != nil || !strings.Contains(string(data), `"cl100k_base"`) {
		t.Fatalf("%s: %q, %v; want the tokenizer named", SessionFile, data, err)
	}

	now := made
	now.Tokenizer, now.Count = "o200k_base", o2.Count
	// Checked from scratch each time: state.json is rewritten from the
	// replay when it differs.
	h = openHost(t, now, "s")
	if rep := h.Report(); rep.StateMismatch || len(rep.Warnings) > 0 {
		t.Errorf("reopened under o200k_base: %+v, want the state as saved", rep)
	}
	for id, w := range want {
		if got, _ := h.Ref(id); got != w {
			t.Errorf("%s: ref %+v after the reopen, want %+v", id, got, w)
		}
	}
	if n := h.opts.Count(texts[0]); n != cl.Count(texts[0]) {
		t.Errorf("the reopened host counts %d tokens, want cl100k_base's %d", n, cl.Count(texts[0]))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(now, "s")
	if err != nil {
		t.Fatal(err)
	}
	if in.StateFile.Check != StateCurrent {
		t.Errorf("Inspect under o200k_base: state.json %+v, want current", in.StateFile)
	}
	if rep, err := Rebuild(now, "s"); err != nil || rep.Before.Check != StateCurrent {
		t.Errorf("Rebuild under o200k_base: state.json was %+v (%v), want current", rep.Before, err)
	}

	// A session made before sessions named their tokenizer follows the
	// configuration, and gets no file.
	if err := os.Remove(filepath.Join(made.Dir, "s", SessionFile)); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, now, "s")
	if n := h.opts.Count(texts[0]); n != o2.Count(texts[0]) {
		t.Errorf("a session without %s counts %d tokens, want the configured o200k_base's %d", SessionFile, n, o2.Count(texts[0]))
	}
	h.Close()
	if _, err := os.Stat(filepath.Join(made.Dir, "s", SessionFile)); !os.IsNotExist(err) {
		t.Errorf("reopening an older session wrote a %s (%v)", SessionFile, err)
	}

	// A file naming a tokenizer this mcproxy lacks is an error that says
	// how to get past it.
	if err := os.WriteFile(filepath.Join(made.Dir, "s", SessionFile), []byte(`{"tokenizer": "p50k"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(now, "s"); err == nil || !strings.Contains(err.Error(), SessionFile) || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("opened a session naming an unknown tokenizer: %v", err)
	}
}

// A placeholder for a part that is not text counts as the tokens it names
// in every session, whatever counter the Options carry: the gateway records
// an image that way, and `mcproxy sessions show` (which passes the plain
// tokenizer) must replay it as the gateway counted it.
func TestOpaquePartsCountAsTheirEstimate(t *testing.T) {
	cl, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Tokenizer, opts.Count = "cl100k_base", cl.Count
	h := openHost(t, opts, "gw")
	image := OpaqueText("image", 1500)
	turn, err := h.Turn(context.Background(), Message{CoreMessage: noa.CoreMessage{Role: noa.RoleUser, ContentType: noa.CTText, Text: image}})
	if err != nil {
		t.Fatal(err)
	}
	if ref, ok := h.Ref(turn.Recorded[0].ID); !ok || ref.Tokens != 1500 {
		t.Errorf("the image's ref: %+v %v, want 1500 tokens (its text alone is %d)", ref, ok, cl.Count(image))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(opts, "gw")
	if err != nil {
		t.Fatal(err)
	}
	if in.StateFile.Check != StateCurrent {
		t.Errorf("Inspect: state.json %+v, want current", in.StateFile)
	}
}
