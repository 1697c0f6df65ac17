// Package loopback serves an http.Handler on a free 127.0.0.1 port: the job
// net/http/httptest does for tests, for the code the mcproxy binary links
// (the scripted model and the front of `mcproxy bench gateway`), which must
// not pull in test packages. It owns the listener, the accept loop and the
// count of requests in flight, and nothing else; no goroutine of it outlives
// Close.
package loopback

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// Server is a running loopback HTTP server.
type Server struct {
	// URL is the server's base, e.g. http://127.0.0.1:41234.
	URL string

	srv     *http.Server
	serving <-chan struct{} // closed once the accept loop has returned
	once    sync.Once

	// inflight counts handlers running, so Close can wait for them as
	// httptest.Server.Close does; gate and shut keep it from growing once
	// Close waits (a WaitGroup must not grow while it is waited on).
	inflight sync.WaitGroup
	gate     sync.RWMutex
	shut     bool
}

// NewServer serves h on a free loopback port. Like httptest.NewServer, whose
// place it takes, it panics when no port can be had; Listen returns the
// error instead.
func NewServer(h http.Handler) *Server {
	s, err := Listen(h)
	if err != nil {
		panic(err)
	}
	return s
}

// Listen serves h on a free loopback port.
func Listen(h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on a loopback port: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.gate.RLock()
		if s.shut {
			s.gate.RUnlock()
			http.Error(w, "the server is closing", http.StatusServiceUnavailable)
			return
		}
		s.inflight.Add(1)
		s.gate.RUnlock()
		defer s.inflight.Done()
		h.ServeHTTP(w, r)
	})}
	// Serve returns only once Close has closed the listener; its error
	// then is http.ErrServerClosed, nothing to report. net/http recovers
	// a handler's panic itself; the helper covers the accept loop.
	s.serving = goroutine.Go(nil, "loopback accept", func() { _ = s.srv.Serve(ln) })
	return s, nil
}

// Close closes the listener and every connection, including those of
// requests in flight (their handlers see their request's context end and
// their writes fail), then waits for those handlers to return and the
// accept loop to end. Calling it again does nothing.
func (s *Server) Close() {
	s.once.Do(func() {
		s.gate.Lock()
		s.shut = true
		s.gate.Unlock()
		// Its only error is the listener's close, which ends Serve anyway.
		_ = s.srv.Close()
		s.inflight.Wait()
		<-s.serving
	})
}
