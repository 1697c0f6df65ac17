package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// A session opened with a configuration of its own (a gateway conversation
// and its model's window) keeps it: a later open asking for another, an
// open with the shared Options (the CLI) and Inspect all replay its
// transcript with the one it was created under.
func TestHostConfigSavedWithTheSession(t *testing.T) {
	opts := Options{Dir: t.TempDir()}
	small := noa.DefaultConfig(8000)
	h, err := OpenWith(opts, "gw-1", HostOptions{Noa: &small})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(opts.Dir, "gw-1", HostConfigFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a file only its owner reads", HostConfigFile, fi, err)
	}

	large := noa.DefaultConfig(200000)
	for name, ho := range map[string]HostOptions{"another window": {Noa: &large}, "shared options": {}} {
		h, err := OpenWith(opts, "gw-1", ho)
		if err != nil {
			t.Fatal(err)
		}
		if h.cfg.ModelContextLimit != 8000 || h.cfg.Compress != small.Compress {
			t.Errorf("%s: host runs with window %d, want the saved 8000", name, h.cfg.ModelContextLimit)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	in, err := inspect(opts, "gw-1")
	if err != nil {
		t.Fatal(err)
	}
	if in.cfg.ModelContextLimit != 8000 {
		t.Errorf("Inspect replays with window %d, want the saved 8000", in.cfg.ModelContextLimit)
	}

	// A session of the shared Options has no file, and follows them.
	h, err = Open(opts, "mcp-1")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := os.Stat(filepath.Join(opts.Dir, "mcp-1", HostConfigFile)); !os.IsNotExist(err) {
		t.Errorf("a shared-options session got a %s (%v)", HostConfigFile, err)
	}

	// A damaged file is an error that says how to get past it.
	if err := os.WriteFile(filepath.Join(opts.Dir, "gw-1", HostConfigFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(opts, "gw-1", HostOptions{Noa: &small}); err == nil {
		t.Error("opened a session whose noa.json is damaged")
	}
}
