package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// A conversation not used for the idle timeout has its host released (its
// files closed, so another opener gets the lock); one used since keeps its
// host; a released conversation is restored on its next request.
func TestReleaseIdleConversations(t *testing.T) {
	dir := t.TempDir()
	hosts := sessionHosts(t, dir)
	ctx := context.Background()
	start := time.Now()
	for _, id := range []string{"conv-old", "conv-new"} {
		h, err := hosts.Host(ctx, id, 8000)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Record(ctx, noa.CoreMessage{ID: id + "-1", Role: noa.RoleUser, ContentType: noa.CTText, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	// conv-new is used again a minute later; then the sweep runs with a
	// 30 s timeout at start+70s: conv-old is 70 s idle, conv-new 10 s.
	hosts.idle.touch("conv-new", start.Add(time.Minute))
	if n := hosts.ReleaseIdle(start.Add(70*time.Second), 30*time.Second); n != 1 {
		t.Fatalf("released %d conversations, want 1", n)
	}
	opts := session.Options{Dir: dir, Count: CountTokens(nil)}
	h, err := session.Open(opts, "conv-old")
	if err != nil {
		t.Fatalf("the idle conversation's files should be released: %v", err)
	}
	h.Close()
	var inUse *session.InUseError
	if _, err := session.Open(opts, "conv-new"); !errors.As(err, &inUse) {
		t.Fatalf("the conversation in use should stay open, got %v", err)
	}
	h2, err := hosts.Host(ctx, "conv-old", 8000)
	if err != nil {
		t.Fatal(err)
	}
	if !h2.Has("conv-old-1") {
		t.Error("the released conversation was not restored from disk")
	}
}
