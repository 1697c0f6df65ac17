package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// TestFollowAppliesCatalogSnapshots: the front subscribed to the catalog
// takes in each server whose served tools changed, index included, and
// lets a server that went down go (issue 28).
func TestFollowAppliesCatalogSnapshots(t *testing.T) {
	t.Parallel()
	mgr := upstream.New(&config.Config{}, upstream.Options{})
	t.Cleanup(func() { _ = mgr.Close() })
	ix := newWordIndex()
	s, err := New(Deps{Upstreams: mgr, Index: ix}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(catalog.Options{})
	t.Cleanup(cat.Close)
	cat.Subscribe("front", s.Follow)
	settle := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cat.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}

	cat.Update("a", []mcp.Tool{{Name: "echo", Description: "Echo a message."}, {Name: "add", Description: "Add numbers."}})
	cat.Update("b", []mcp.Tool{{Name: "ping", Description: "Ping a host."}})
	settle()
	if got, want := s.catalogIDs(), []string{"a:add", "a:echo", "b:ping"}; !slices.Equal(got, want) {
		t.Fatalf("got catalog %v, want %v", got, want)
	}
	ix.mu.Lock()
	indexed := len(ix.docs["a"])
	ix.mu.Unlock()
	if indexed != 2 {
		t.Errorf("got %d tools of a indexed, want 2", indexed)
	}

	cat.Update("a", nil)
	settle()
	if got, want := s.catalogIDs(), []string{"b:ping"}; !slices.Equal(got, want) {
		t.Errorf("got catalog %v after a went down, want %v", got, want)
	}
	ix.mu.Lock()
	_, still := ix.docs["a"]
	ix.mu.Unlock()
	if still {
		t.Error("a is still indexed after it went down")
	}
}
