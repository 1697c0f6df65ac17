package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/dashboard"
)

// A refused config reload is shown until the file is fixed (issue 30): in
// /status, in `mcproxy status` and `servers` (which exit 1 meanwhile and
// still list the running servers) and as a banner on
// the dashboard in chromium; the next reload that succeeds clears it.
func TestRefusedReloadShown(t *testing.T) {
	bin := chromium(t)
	cfg := map[string]any{"noa": map[string]any{"enabled": false}, "mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}}}
	s := startServe(t, cfg)
	status := func() dashboard.Status {
		t.Helper()
		resp, err := http.Get(s.base + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st dashboard.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	dump := func() string { return s.stderr.String() }
	eventually(t, "obs ready", 30*time.Second, func() bool { st := status(); return len(st.Servers) == 1 && st.Servers[0].State == "ready" }, dump)
	if st := status(); st.RefusedReload != nil {
		t.Fatalf("/status before any reload: got refused_reload %+v, want none", st.RefusedReload)
	}

	cfg["retrieve_limit"] = -5
	writeJSON(t, s.config, cfg)
	eventually(t, "the refused reload in /status", 10*time.Second, func() bool { return status().RefusedReload != nil }, dump)
	r := status().RefusedReload
	if !strings.Contains(r.Error, "retrieve_limit") || r.Config != s.config || r.Time.IsZero() {
		t.Errorf("refused_reload: got %+v, want the retrieve_limit error, config %s and a time", r, s.config)
	}
	code, out, errOut := runCLI(t, "status", "--config", s.config)
	if code != exitError || !strings.Contains(out, "config change refused at ") || !strings.Contains(out, "retrieve_limit") || !strings.Contains(out, s.config) {
		t.Errorf("mcproxy status with a refused reload: exit %d (want 1)\n%s%s", code, out, errOut)
	}
	// servers lists the running mcproxy's servers: the file's are unknown.
	code, out, errOut = runCLI(t, "servers", "--config", s.config)
	if code != exitError || !regexp.MustCompile(`obs\s+ready`).MatchString(out) || !strings.Contains(out, "config change refused at ") {
		t.Errorf("mcproxy servers with a refused reload: exit %d (want 1), want obs ready and the refused change\n%s%s", code, out, errOut)
	}
	dom := string(headless(t, bin, s.base+"/", "--dump-dom"))
	if !strings.Contains(dom, `<div id="reload-refused" class="banner" role="alert">`) ||
		!strings.Contains(dom, `<code id="reload-config">`+s.config+`</code>`) || !strings.Contains(dom, "retrieve_limit") {
		t.Errorf("the page shows no refused-reload banner naming the file and the error; DOM:\n%s", dom)
	}

	delete(cfg, "retrieve_limit")
	writeJSON(t, s.config, cfg)
	eventually(t, "refused_reload cleared by a good reload", 10*time.Second, func() bool { return status().RefusedReload == nil }, dump)
	code, out, errOut = runCLI(t, "status", "--config", s.config)
	if code != exitOK || strings.Contains(out, "refused") {
		t.Errorf("mcproxy status after the fix: exit %d (want 0), no refused line\n%s%s", code, out, errOut)
	}
	dom = string(headless(t, bin, s.base+"/", "--dump-dom"))
	if !strings.Contains(dom, `<div id="reload-refused" class="banner" role="alert" hidden="">`) {
		t.Errorf("the banner stays after the fix; DOM:\n%s", dom)
	}
}
