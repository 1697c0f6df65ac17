package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestExampleConfigOnAnEmptyNPMCache: the README's example config, started
// with an empty npm cache (npx downloads and installs each server from the
// npm registry), brings every enabled server to ready, and none is killed
// mid-install (issue 30): init_timeout is set to 3s here, far below what an
// install takes, and each first start still waits for npx, because the
// package is not in npx's cache yet. Before, each start timed out, npx was
// killed mid-install, and a half-installed cache could fail every retry.
func TestExampleConfigOnAnEmptyNPMCache(t *testing.T) {
	t.Parallel()
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "configs", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg["listen"], cfg["data_dir"], cfg["init_timeout"] = addr, filepath.Join(dir, "data"), "3s"
	delete(cfg, "auth_token")
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), cfg)

	cmd := exec.Command(binary, "serve", "--config", config)
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, "npm-cache"), "HOME="+filepath.Join(dir, "home"),
		"MCPROXY_FS_ROOT="+dir, "MCPROXY_MEMORY_FILE="+filepath.Join(dir, "memory.jsonl"))
	p := startProc(t, "mcproxy serve", cmd)
	waitListening(t, addr, p)

	want := map[string]bool{}
	for name, s := range cfg["mcpServers"].(map[string]any) {
		if e, ok := s.(map[string]any)["enabled"]; !ok || e != false {
			want[name] = true
		}
	}
	type server struct {
		Name, State string
		LastError   string `json:"last_error"`
	}
	var servers []server
	deadline := time.Now().Add(4 * time.Minute)
	for ready := 0; ready < len(want); {
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes %d of %d servers are ready: %+v\n%s", ready, len(want), servers, p.output())
		}
		if p.exited() {
			t.Fatalf("mcproxy exited:\n%s", p.output())
		}
		time.Sleep(250 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/status")
		if err != nil {
			continue
		}
		var st struct {
			Servers []server `json:"servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			continue
		}
		servers, ready = st.Servers, 0
		for _, s := range servers {
			if want[s.Name] && s.State == "ready" {
				ready++
			}
		}
	}
	if out := p.output(); strings.Contains(out, "timed out after 3s") {
		t.Errorf("a first start timed out at init_timeout while npx installed:\n%s", out)
	}
}
