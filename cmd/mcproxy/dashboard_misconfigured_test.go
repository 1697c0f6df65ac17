package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/dashboard"
)

// A server whose config entry has problems shows on the dashboard as
// misconfigured with its reason, apart from servers that are down, and
// neither it nor a disabled server counts against /readyz or the page's
// "servers ready" (issue 30).
func TestDashboardShowsMisconfigured(t *testing.T) {
	bin := chromium(t)
	s := startServe(t, map[string]any{
		"noa": map[string]any{"enabled": false},
		"mcpServers": map[string]any{
			"obs": map[string]any{"url": activityUpstream(t)},
			"bad": map[string]any{"command": "x", "enabled": "yes"},
			"off": map[string]any{"command": "y", "enabled": false},
		},
	})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const wantReady = "ready: 1 of 1 servers ready; 1 misconfigured (fix the config entry: mcproxy servers)\n"
	eventually(t, "/readyz ready", 30*time.Second, func() bool { code, _ := get("/readyz"); return code == http.StatusOK },
		func() string { _, b := get("/readyz"); return b + "\n" + s.stderr.String() })
	if _, body := get("/readyz"); body != wantReady {
		t.Errorf("/readyz: got %q, want %q", body, wantReady)
	}
	var st dashboard.Status
	_, body := get("/status")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 3 || st.Servers[0].Name != "bad" || st.Servers[0].State != "misconfigured" || !strings.Contains(st.Servers[0].LastError, "mcpServers.bad.enabled") {
		t.Fatalf("/status servers: got %+v, want bad misconfigured, naming mcpServers.bad.enabled", st.Servers)
	}

	dom := string(headless(t, bin, s.base+"/", "--dump-dom"))
	for _, want := range []string{
		`<span class="state misconfigured">misconfigured</span>`,
		`<tr data-error-of="bad"><td colspan="5" class="error misconfigured">not started: its config entry has problems (fix them and save the file): `,
		"mcpServers.bad.enabled",
		` · 1 of 1 servers ready · 1 misconfigured · `,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s; DOM:\n%s", want, dom)
		}
	}
}
