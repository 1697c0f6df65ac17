package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestMisconfiguredServer: a server set aside for its config entry's
// problems (config.Config.Broken) never starts and says why, the others
// run, and a configuration that mends the entry starts it (issue 30).
func TestMisconfiguredServer(t *testing.T) {
	good, _ := peerServer(t, "peer")
	const problems = "mcpServers.bad.env.KEY: ${KEY} is not set: export KEY, or give a default with ${KEY:-value}"
	cfg := &config.Config{MCPServers: map[string]config.ServerConfig{"good": good}, Broken: map[string]string{"bad": problems},
		InitTimeout: config.Duration(20 * time.Second)}
	m := New(cfg, Options{})
	t.Cleanup(func() { closeAndCheck(t, m) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)

	if st := statusOf(t, m, "bad"); st.State != StateMisconfigured || st.LastError != problems {
		t.Errorf("bad: got %+v, want misconfigured with its problems", st)
	}
	if st := statusOf(t, m, "good"); st.State != StateReady {
		t.Errorf("good: got %+v, want ready", st)
	}
	var down *DownError
	if _, err := m.Call(ctx, "bad", "echo", nil); !errors.As(err, &down) || down.State != StateMisconfigured || down.LastError != problems {
		t.Errorf("call to bad: got %v, want a DownError saying it is misconfigured, with its problems", err)
	}

	mended := &config.Config{MCPServers: map[string]config.ServerConfig{"good": good, "bad": good}, InitTimeout: cfg.InitTimeout}
	if ch := m.Reconfigure(mended); len(ch.Changed) != 1 || ch.Changed[0] != "bad" {
		t.Errorf("Reconfigure with the entry mended: got %+v, want bad changed", ch)
	}
	waitUntil(t, time.Minute, "bad ready once mended", func() bool { return statusOf(t, m, "bad").State == StateReady })
	if ch := m.Reconfigure(cfg); len(ch.Changed) != 1 || ch.Changed[0] != "bad" {
		t.Errorf("Reconfigure with the entry broken again: got %+v, want bad changed", ch)
	}
	if st := statusOf(t, m, "bad"); st.State != StateMisconfigured {
		t.Errorf("bad broken again: got %+v, want misconfigured", st)
	}
}
