package upstream

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
)

// TestListingsReachTheCatalog: with Options.Catalog the manager publishes
// each server's exposed tools, the upstream's own definitions, when it
// comes up, after list_changed, and nil when a reload stops it (issue 28).
func TestListingsReachTheCatalog(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	cat := catalog.New(catalog.Options{})
	t.Cleanup(cat.Close) // after the manager's close, registered below
	served := make(chan []string, 10)
	cat.Subscribe("test", func(_, next *catalog.Snapshot) {
		var names []string
		for _, tl := range next.ServerTools("p") {
			names = append(names, tl.Name)
		}
		served <- names
	})
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{Catalog: cat})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cat.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	snap := cat.Snapshot()
	if got := snap.ServerTools("p"); len(got) != len(peerToolNames) {
		t.Fatalf("got %d tools served once started, want %d", len(got), len(peerToolNames))
	}
	if got := <-served; !slices.Equal(got, peerToolNames) {
		t.Fatalf("got served %v, want %v", got, peerToolNames)
	}
	def, ok := snap.Definition("p", "raw")
	want, _ := m.MCPTool("p", "raw")
	if !ok || string(def.RawInputSchema) != string(want.RawInputSchema) {
		t.Errorf("got the catalog's raw schema %s, want the upstream's %s", def.RawInputSchema, want.RawInputSchema)
	}

	call(t, m, "p", "add_tool", map[string]any{"name": "fresh"})
	select {
	case got := <-served:
		if !slices.Contains(got, "fresh") {
			t.Errorf("got served %v after list_changed, want fresh among them", got)
		}
	case <-ctx.Done():
		t.Fatal("the catalog did not get the listing that followed list_changed")
	}

	m.Reconfigure(&config.Config{MCPServers: map[string]config.ServerConfig{}})
	if err := cat.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, up := cat.Snapshot().Server("p"); up {
		t.Error("a server a reload stopped is still in the catalog")
	}
}
