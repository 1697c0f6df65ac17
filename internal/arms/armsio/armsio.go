// Package armsio is the I/O side of package arms, which stays pure: it runs
// the TSCG Node shim for the tscg arm and reads result-fixture files. The
// profiler and any other host use it; arms itself never imports it.
package armsio

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcproxy/mcproxy/internal/arms"
)

// ShimDirEnv names the environment variable that points NewTSCG at a shim
// directory, for running outside a source checkout.
const ShimDirEnv = "MCPROXY_TSCG_DIR"

// DefaultTimeout bounds one run of the shim when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// maxStderr is how much of the shim's stderr an error quotes.
const maxStderr = 2048

// Options tune a NodeRunner.
type Options struct {
	// Node is the node binary; "" looks up "node" on PATH.
	Node string
	// Timeout bounds one run of the shim; zero means DefaultTimeout.
	Timeout time.Duration
}

// NodeRunner runs bench/tscg/shim.mjs with node. It implements arms.Runner.
// Whether it can run is decided once, at construction: node must be found,
// the shim must exist and @tscg/core must be installed in the shim's
// node_modules.
type NodeRunner struct {
	dir     string
	node    string
	timeout time.Duration
	err     error // nil when the runner can run
}

// NewNodeRunner returns a runner for the shim in shimDir.
func NewNodeRunner(shimDir string, opts Options) *NodeRunner {
	r := &NodeRunner{dir: shimDir, timeout: opts.Timeout}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	r.node, r.err = check(shimDir, opts.Node)
	return r
}

// check finds node and verifies the shim directory.
func check(dir, node string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "shim.mjs")); err != nil {
		return "", fmt.Errorf("tscg: the shim %s is missing: %w", filepath.Join(dir, "shim.mjs"), arms.ErrArmUnavailable)
	}
	if node == "" {
		node = "node"
	}
	path, err := exec.LookPath(node)
	if err != nil {
		return "", fmt.Errorf("tscg: node is not installed or not on PATH (Node.js 18 or newer is needed): %w", arms.ErrArmUnavailable)
	}
	core := filepath.Join(dir, "node_modules", "@tscg", "core", "package.json")
	if _, err := os.Stat(core); err != nil {
		return "", fmt.Errorf("tscg: @tscg/core is not installed in %s (it is not on the npm registry; install it by hand into that directory): %w",
			filepath.Join(dir, "node_modules"), arms.ErrArmUnavailable)
	}
	return path, nil
}

// Available implements arms.Runner.
func (r *NodeRunner) Available() error { return r.err }

// Run implements arms.Runner: it starts node on the shim in the shim's
// directory, feeds it input and returns its stdout. A non-zero exit is an
// error quoting the end of stderr. The process is killed when ctx ends or the
// timeout passes.
func (r *NodeRunner) Run(ctx context.Context, input []byte) ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.node, "shim.mjs")
	cmd.Dir = r.dir
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second // bounds Wait if a grandchild holds the pipes
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("running node shim.mjs in %s: %w", r.dir, ctx.Err())
		}
		return nil, fmt.Errorf("running node shim.mjs in %s: %w%s", r.dir, err, stderrTail(stderr.Bytes(), stdout.Bytes()))
	}
	return stdout.Bytes(), nil
}

// stderrTail quotes the end of the shim's stderr, or its stdout when stderr
// is empty (the shim reports a load failure as a protocol line).
func stderrTail(stderr, stdout []byte) string {
	msg := bytes.TrimSpace(stderr)
	if len(msg) == 0 {
		msg = bytes.TrimSpace(stdout)
	}
	if len(msg) == 0 {
		return ""
	}
	if len(msg) > maxStderr {
		msg = append([]byte("..."), msg[len(msg)-maxStderr:]...)
	}
	return ": " + string(msg)
}

// NewTSCGAt returns the tscg arm running the shim in shimDir.
func NewTSCGAt(shimDir string) *arms.TSCGArm {
	return arms.NewTSCG(NewNodeRunner(shimDir, Options{}))
}

// NewTSCG returns the tscg arm running the shim found in $MCPROXY_TSCG_DIR
// or, when that is unset, in bench/tscg of the source tree holding the
// working directory (found by walking up to go.mod). When neither exists the
// arm reports itself unavailable with the reason.
func NewTSCG() *arms.TSCGArm {
	dir, err := ShimDir()
	if err != nil {
		return arms.NewTSCG(unavailable{err})
	}
	return NewTSCGAt(dir)
}

// ShimDir locates the shim directory the way NewTSCG does.
func ShimDir() (string, error) {
	if dir := os.Getenv(ShimDirEnv); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("tscg: locating bench/tscg: %v: %w", err, arms.ErrArmUnavailable)
	}
	root, err := RepoRoot(wd)
	if err != nil {
		return "", fmt.Errorf("tscg: locating bench/tscg (set %s): %v: %w", ShimDirEnv, err, arms.ErrArmUnavailable)
	}
	return filepath.Join(root, "bench", "tscg"), nil
}

// RepoRoot walks up from dir to the first directory holding go.mod.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	start := dir
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or above", start)
		}
		dir = parent
	}
}

// unavailable is a runner that can never run.
type unavailable struct{ err error }

func (u unavailable) Available() error { return u.err }

func (u unavailable) Run(context.Context, []byte) ([]byte, error) { return nil, u.err }

// LoadResultFixtures reads a result-fixture file and validates it with
// arms.ParseResultFixtures.
func LoadResultFixtures(path string) (*arms.ResultFixtureSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading result fixtures: %w", err)
	}
	set, err := arms.ParseResultFixtures(data)
	if err != nil {
		return nil, fmt.Errorf("loading result fixtures from %s: %w", path, err)
	}
	return set, nil
}
