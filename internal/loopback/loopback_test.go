package loopback

import (
	"io"
	"net/http"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: Close
// ends the accept loop and every connection's goroutine.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }

func TestServes(t *testing.T) {
	s := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.URL.Path) }))
	defer s.Close()
	resp, err := http.Get(s.URL + "/there")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "hello /there" {
		t.Fatalf("got %q (%v), want hello /there", b, err)
	}
}

// TestCloseEndsRequestsInFlight: a handler waiting on its request is
// released by Close (the connection closes under it) and Close returns only
// after it has, as httptest.Server.Close does.
func TestCloseEndsRequestsInFlight(t *testing.T) {
	started, returned := make(chan struct{}), make(chan struct{})
	s := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		close(started)
		<-r.Context().Done()
	}))
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-started
	s.Close()
	select {
	case <-returned:
	default:
		t.Fatal("Close returned before the handler in flight did")
	}
	if err := <-failed; err == nil {
		t.Error("the request in flight succeeded, want its connection closed")
	}
	s.Close() // a second Close does nothing
}
