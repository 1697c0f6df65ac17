package integrity

import (
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkReview is one review of a 50-tool listing against an approvals
// file on disk (the lock, the read and the hashing; nothing changed, so
// nothing is written). It runs on the catalog's goroutine; before issue 28
// it ran on the upstream supervisor's, for every listing.
func BenchmarkReview(b *testing.B) {
	r := NewReviewer(NewStore(b.TempDir()), Options{})
	listed := make([]mcp.Tool, 50)
	for i := range listed {
		listed[i] = mcp.NewTool(fmt.Sprintf("tool_%02d", i), mcp.WithDescription("Does one thing to a file."), mcp.WithString("path", mcp.Required()))
	}
	r.Review("a", listed, nil) // the first review approves them (trust on first use)
	b.ReportAllocs()
	for b.Loop() {
		if held := r.Review("a", listed, nil); len(held) != 0 {
			b.Fatalf("got %d held, want none", len(held))
		}
	}
}
