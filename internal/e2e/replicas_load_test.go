package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Issue 32's load run: 50 MCP clients (mcp-go's), each with a session of
// its own, make 200 tools/call each (memory__read_graph, direct mode)
// across three replicas sharing one PostgreSQL behind the test's
// round-robin proxy (every client's calls land on every replica), and the
// same against one replica keeping its state in files, in the same run.
// Every call must succeed; calls/s is reported for each. One iteration is
// the whole run (CI runs each benchmark once); b.N > 1 repeats it.
//
//	go test -run '^$' -bench BenchmarkLoadAcrossReplicas -benchtime 1x ./internal/e2e/
func BenchmarkLoadAcrossReplicas(b *testing.B) {
	const clients, calls = 50, 200
	for _, tc := range []struct {
		name     string
		replicas int
		shared   bool
	}{
		{"replicas=3/store=postgres", 3, true},
		{"replicas=1/store=files", 1, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			urls, _ := startReplicas(b, tc.replicas, tc.shared, "memory", "memory__read_graph")
			base := urls[0]
			if tc.replicas > 1 {
				lb, _ := newRoundRobin(b, urls)
				base = lb.URL
			}
			var total time.Duration
			for range b.N {
				elapsed, errs := loadRun(b, base+"/mcp", clients, calls)
				if len(errs) > 0 {
					b.Fatalf("%d of %d calls failed; the first: %v", len(errs), clients*calls, errs[0])
				}
				total += elapsed
			}
			perSec := float64(clients*calls*b.N) / total.Seconds()
			b.ReportMetric(perSec, "calls/s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: %d clients x %d calls in %s: %.0f calls/s, 0 errors", tc.name, clients, calls, total/time.Duration(b.N), perSec)
		})
	}
}

// loadRun runs clients sessions of calls tools/call each against url at
// once (each client initialized before the clock starts) and returns the
// time the calls took and the errors.
func loadRun(b *testing.B, url string, clients, calls int) (time.Duration, []error) {
	cs := make([]*client.Client, clients)
	for i := range cs {
		cs[i] = startHTTP(b, url)
		initialize(b, cs[i])
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	for i, c := range cs {
		wg.Go(func() {
			for j := range calls {
				req := mcp.CallToolRequest{}
				req.Params.Name = "memory__read_graph"
				req.Params.Arguments = map[string]any{}
				res, err := c.CallTool(ctx, req)
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %s", text(res))
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("client %d, call %d: %w", i, j, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, c := range cs {
		c.Close()
	}
	return elapsed, errs
}
