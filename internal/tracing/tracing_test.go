package tracing

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// Close must stop the batching exporter's goroutines: nothing of a Tracer
// outlives it.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }

// A call's span reaches a real OTLP/HTTP endpoint by Close, named after the
// tool, with its error masked.
func TestCallExportedByClose(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	tr, err := New(Options{URL: srv.URL + "/v1/traces", Version: "test", Mask: func(s string) string {
		return strings.ReplaceAll(s, "s3cret", "***")
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr.Call(Call{Start: time.Now(), Duration: time.Millisecond, Server: "git", Tool: "log", Session: "sess-1",
		Error: "upstream said: token s3cret refused"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := bytes.Join(bodies, nil)
	mu.Unlock()
	for _, want := range []string{"tools/call git:log", "sess-1", "upstream said: token *** refused"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("exported spans (%d bytes) lack %q", len(all), want)
		}
	}
	if bytes.Contains(all, []byte("s3cret")) {
		t.Error("the unmasked error reached the collector")
	}
}

// A nil Tracer records and closes as a no-op.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	tr.Call(Call{Server: "git", Tool: "log"})
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
