package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// status and servers look first where running instances of the same
// config said they listen, skipping those whose process is gone and those
// of other configs, then at the config's listen.
func TestCandidateAddrs(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	cfg := &config.Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:8765"}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, in := range []instance{
		{PID: os.Getpid(), Listen: "127.0.0.1:9001", Config: cfgPath, Started: now},
		{PID: gone.Process.Pid, Listen: "127.0.0.1:9002", Config: cfgPath, Started: now.Add(time.Second)},
		{PID: os.Getppid(), Listen: "127.0.0.1:9003", Config: filepath.Join(dir, "other.json"), Started: now},
	} {
		data, _ := json.Marshal(in)
		path := filepath.Join(cfg.DataDir, instancesDir, strconv.Itoa(in.PID)+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"127.0.0.1:9001", "127.0.0.1:8765"}, candidateAddrs(cfg, cfgPath)); diff != "" {
		t.Errorf("candidateAddrs (-want +got):\n%s", diff)
	}
	// A new instance prunes the file of the one that is gone.
	remove, err := announce(cfg.DataDir, cfgPath, "127.0.0.1:9004")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, instancesDir, strconv.Itoa(gone.Process.Pid)+".json")); !os.IsNotExist(err) {
		t.Errorf("the file of an instance that is gone: got %v, want it pruned", err)
	}
	if got := candidateAddrs(cfg, cfgPath); got[0] != "127.0.0.1:9004" {
		t.Errorf("candidateAddrs after announce: got %v, want this instance's address", got)
	}
	remove()
	if diff := cmp.Diff([]string{"127.0.0.1:8765"}, candidateAddrs(cfg, cfgPath)); diff != "" {
		t.Errorf("candidateAddrs after remove (-want +got):\n%s", diff)
	}
}
