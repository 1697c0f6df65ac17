package mcptransport

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The registry on its own: only issued ids validate, a session with a
// request in flight is never idle, and sweep ends exactly the idle ones.
func TestSessionRegistrySweep(t *testing.T) {
	t.Parallel()
	r := newSessionRegistry(time.Minute, nil)
	var ended []string
	r.end = func(id string) { ended = append(ended, id); _, _ = r.Terminate(id) }
	a, b := r.Generate(), r.Generate()
	if a == b {
		t.Fatal("two sessions got one id")
	}
	if _, err := r.Validate("mcp-" + strings.Repeat("0", 32)); err == nil {
		t.Error("an id never issued validated")
	}
	// b has a request in flight: hold it open inside track.
	release := make(chan struct{})
	entered := make(chan struct{})
	go r.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release
	})).ServeHTTP(&recorder{header: http.Header{}}, requestIn(b))
	<-entered
	if n := r.sweep(time.Now().Add(2 * time.Minute)); n != 1 || len(ended) != 1 || ended[0] != a {
		t.Fatalf("sweep ended %v, want just %s", ended, a)
	}
	close(release)
	if _, err := r.Validate(b); err != nil {
		t.Errorf("the busy session was ended: %v", err)
	}
	if _, err := r.Validate(a); err == nil {
		t.Error("the idle session still validates")
	}
}

func requestIn(id string) *http.Request {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, PathStreamable, http.NoBody)
	req.Header.Set("Mcp-Session-Id", id)
	return req
}
