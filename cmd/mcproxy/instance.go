package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/config"
)

// instancesDir is where each serving mcproxy leaves word of the address it
// listens on, under its data_dir: the commands that talk to it (status,
// servers) find one started with --listen there, which the config's listen
// does not name (issue 30).
const instancesDir = "run"

// instance is what <data_dir>/run/<pid>.json holds. No token: the caller
// has its own from the config.
type instance struct {
	PID     int       `json:"pid"`
	Listen  string    `json:"listen"` // the address bound, port resolved
	Config  string    `json:"config"` // absolute path of its config file
	Started time.Time `json:"started"`
}

// announce writes the file that makes the mcproxy serving cfgPath on addr
// findable, first removing the files of instances that are gone, and
// returns the function that removes it again.
func announce(dataDir, cfgPath, addr string) (remove func(), err error) {
	dir := filepath.Join(dataDir, instancesDir)
	pruneInstances(dir)
	abs, err := filepath.Abs(config.ExpandHome(cfgPath))
	if err != nil {
		abs = cfgPath
	}
	data, err := json.Marshal(instance{PID: os.Getpid(), Listen: addr, Config: abs, Started: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	// A loss in a crash costs nothing: a file naming a dead instance is
	// skipped and pruned anyway.
	if err := atomicfile.WriteFile(path, data, atomicfile.Options{NoSync: true}); err != nil {
		return nil, fmt.Errorf("writing %s (for status and servers to find this mcproxy): %w", path, err)
	}
	return func() { _ = os.Remove(path) }, nil
}

// pruneInstances removes the files of instances whose process has ended.
func pruneInstances(dir string) {
	for _, in := range readInstances(dir) {
		if !processAlive(in.PID) {
			_ = os.Remove(filepath.Join(dir, strconv.Itoa(in.PID)+".json"))
		}
	}
}

// processAlive reports whether process pid may still run; only a process
// known to have ended is false.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// readInstances reads every instance file in dir, newest first; files it
// cannot read are skipped.
func readInstances(dir string) []instance {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []instance
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var in instance
		if json.Unmarshal(data, &in) != nil || in.Listen == "" || strconv.Itoa(in.PID)+".json" != name {
			continue
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b instance) int { return b.Started.Compare(a.Started) })
	return out
}

// candidateAddrs is where to look for the mcproxy serving the config at
// cfgPath, best first: the running instances that announced themselves
// for that config (newest first), then the config's listen.
func candidateAddrs(cfg *config.Config, cfgPath string) []string {
	abs, err := filepath.Abs(config.ExpandHome(cfgPath))
	if err != nil {
		abs = cfgPath
	}
	var out []string
	for _, in := range readInstances(filepath.Join(config.ExpandHome(cfg.DataDir), instancesDir)) {
		if in.Config == abs && processAlive(in.PID) && !slices.Contains(out, in.Listen) {
			out = append(out, in.Listen)
		}
	}
	if !slices.Contains(out, cfg.Listen) {
		out = append(out, cfg.Listen)
	}
	return out
}

// flagAddr turns what --listen or --addr was given ("127.0.0.1:9000",
// ":9000", "http://127.0.0.1:9000/") into host:port.
func flagAddr(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://")
	return strings.TrimSuffix(s, "/")
}
