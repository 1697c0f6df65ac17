package upstream

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A panic in one of a supervisor's rounds counts as a failed attempt: it is
// logged with its stack, the server is down with the panic as its error,
// and the next attempt, after the back-off, brings it up (before, the
// supervisor's recovery sat outside its loop, so one panic kept the server
// down for the life of the process).
func TestSupervisorSurvivesAPanic(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	log, logs := observed()
	m := New(&config.Config{MCPServers: map[string]config.ServerConfig{"p": sc}, InitTimeout: config.Duration(20 * time.Second)},
		Options{Logger: log, MinBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	var attempts atomic.Int32
	m.beforeAttempt = func(server string) {
		if attempts.Add(1) == 1 {
			panic("bad round for " + server)
		}
	}
	t.Cleanup(func() { closeAndCheck(t, m) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)

	waitUntil(t, 30*time.Second, "the server to come up after the panicking attempt", func() bool {
		return statusOf(t, m, "p").State == StateReady
	})
	if n := attempts.Load(); n != 2 {
		t.Errorf("got %d attempts, want 2 (the panicking one and the one that connected)", n)
	}
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("got %q from echo, want \"echo: hi\"", got)
	}
	panics := logs.FilterMessage("upstream supervisor panicked; retrying").All()
	if len(panics) != 1 {
		t.Fatalf("got %d panic log entries, want 1", len(panics))
	}
	f := panics[0].ContextMap()
	if f["panic"] != "bad round for p" || !strings.Contains(f["stack"].(string), "supervise_test") {
		t.Errorf("got fields %v, want the panic and a stack naming the panicking function", f)
	}
}

// A panicking OnToolsChanged is logged with its stack and the supervisor
// goes on: the server is ready and serves calls.
func TestPanickingToolsCallbackLogged(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	log, logs := observed()
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{Logger: log,
		OnToolsChanged: func(string, []config.Tool) { panic("callback broke") }})
	if st := statusOf(t, m, "p"); st.State != StateReady {
		t.Fatalf("got state %s (%s), want ready", st.State, st.LastError)
	}
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("got %q from echo, want \"echo: hi\"", got)
	}
	panics := logs.FilterMessage("goroutine panicked").All()
	if len(panics) != 1 {
		t.Fatalf("got %d panic log entries, want 1", len(panics))
	}
	if f := panics[0].ContextMap(); f["goroutine"] != "OnToolsChanged callback" || f["panic"] != "callback broke" || f["stack"] == nil {
		t.Errorf("got fields %v, want the callback's name, the panic and a stack", f)
	}
}
