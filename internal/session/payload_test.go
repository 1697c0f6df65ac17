package session

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// countingTokenizer is noa's default estimate, counting how often each
// large text is measured and how many bytes it was given in all.
type countingTokenizer struct {
	mu    sync.Mutex
	large map[string]int
	bytes int
}

func (c *countingTokenizer) count(s string) int {
	c.mu.Lock()
	c.bytes += len(s)
	if len(s) >= 100<<10 {
		c.large[s]++
	}
	c.mu.Unlock()
	return noa.DefaultCountTokens(s)
}

// A large argument (a write_file's content) and a large result are never
// tokenized whole (the tokenizer sees a small multiple of the cut's size),
// stored once (the archive holds the original; the
// transcript and the session hold the cut), and read back whole through
// read_archive; the host keeps no reference to the originals after the
// call (its count cache included).
func TestLargePayloads(t *testing.T) {
	opts := testOptions(t)
	tok := &countingTokenizer{large: map[string]int{}}
	opts.Count = tok.count
	h := openHost(t, opts, "s")
	rng := newRand(5)
	content := words(rng, 200000) // about 1.3 MB
	args, _ := json.Marshal(map[string]any{"path": "/big.txt", "content": content})
	callMsg := toolCall("fs:write_file", args)
	callMsg.CutToSize = true
	rec, err := h.Record(context.Background(), callMsg)
	if err != nil {
		t.Fatal(err)
	}
	result := words(rng, 40000) // about 260 KB
	turn, err := h.Turn(context.Background(), toolResult(rec[0], result))
	if err != nil {
		t.Fatal(err)
	}
	argText := ArgumentsText(args)
	for name, text := range map[string]string{"argument": argText, "result": result} {
		if n := tok.large[text]; n != 0 {
			t.Errorf("the %s was tokenized whole %d times, want never", name, n)
		}
	}
	if total := len(argText) + len(result); tok.bytes > total/4 {
		t.Errorf("the tokenizer was given %d bytes for payloads of %d; want a fraction", tok.bytes, total)
	}
	if rec[0].Original == "" || turn.Recorded[0].Original == "" {
		t.Fatalf("the argument (%q) or the result (%q) was not cut", rec[0].Original, turn.Recorded[0].Original)
	}
	tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	if tr.valid > int64(2*(len(rec[0].Text)+len(turn.Recorded[0].Text))+4096) {
		t.Errorf("the transcript's records are %d bytes; want only the cut texts (%d + %d bytes)", tr.valid, len(rec[0].Text), len(turn.Recorded[0].Text))
	}
	for _, m := range h.Messages() {
		if len(m.Text) > 200<<10 {
			t.Errorf("the session holds message %s whole (%d bytes)", m.ID, len(m.Text))
		}
	}
	h.count.mu.Lock()
	held := len(h.count.big)
	h.count.mu.Unlock()
	if held != 0 {
		t.Errorf("the count cache still holds %d large texts after the call", held)
	}
	for _, x := range []struct {
		id, want string
	}{{rec[0].ID, argText}, {turn.Recorded[0].ID, result}} {
		ref, ok := h.Ref(x.id)
		if !ok {
			t.Fatalf("%s has no ref", x.id)
		}
		if got, _ := readAll(t, h, ReadArchiveArgs{Ref: ref.Ref}); got != x.want {
			t.Errorf("read_archive %s: got %d bytes, want the original's %d", ref.Ref, len(got), len(x.want))
		}
		if !strings.Contains(turn.View[len(turn.View)-2].Text+turn.View[len(turn.View)-1].Text, noa.TruncationMarker) {
			t.Errorf("the view does not show the cuts")
		}
	}
}
