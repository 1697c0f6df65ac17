package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The SIGKILL test re-executes this test binary as a child that runs a
// session and stops inside a Compress call; TestMain turns the child into
// that helper.
const (
	envHelperDir   = "MCPROXY_SESSION_KILL_DIR"
	envHelperStage = "MCPROXY_SESSION_KILL_STAGE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envHelperDir); dir != "" {
		killHelper(dir, os.Getenv(envHelperStage))
		return // unreachable: the helper blocks until killed
	}
	if dir := os.Getenv(envLockHolderDir); dir != "" {
		lockHolder(dir)
		return // unreachable: the holder blocks until killed
	}
	// Every test's Manager and Host is closed by then: no goroutine of
	// theirs may outlive Close.
	testenv.VerifyNoLeaks(m)
}

// envLockHolderDir makes the re-executed test binary a process that opens
// session "held" under that directory and blocks (lock_test.go).
const envLockHolderDir = "MCPROXY_SESSION_LOCK_HOLDER_DIR"

var heldHost *Host

// lockHolder opens session "held", announces "HELD <pid>" and blocks until
// it is killed, so only the kernel ever releases its lock.
func lockHolder(dir string) {
	// The host is never closed (the process dies holding it) and stays
	// reachable, so no finalizer closes its lock file.
	var err error
	if heldHost, err = Open(testOptionsIn(dir), "held"); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Printf("HELD %d\n", os.Getpid())
	select {}
}

// killFixtureArgs are the Compress arguments the helper sends.
var killFixtureArgs = compressArgs([][2]string{{"m00001", "m00008"}, {"m00009", "m00016"}})

// killHelper records twelve calls, then compresses two ranges with a hook
// that announces the stage on stdout and blocks, waiting for SIGKILL.
func killHelper(dir, stage string) {
	if stage == "concurrent" {
		concurrentHelper(dir)
		return
	}
	opts := testOptionsIn(dir)
	opts.hook = func(s string) {
		if s == stage {
			fmt.Println("READY")
			select {}
		}
	}
	h, err := Open(opts, "k")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	rng := newRand(11)
	for i := 0; i < 12; i++ {
		rec, err := h.Record(context.Background(), toolCall("fs:read", json.RawMessage(`{}`)))
		if err == nil {
			_, err = h.Turn(context.Background(), toolResult(rec[0], words(rng, 400)))
		}
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
	}
	h.Compress(context.Background(), killFixtureArgs)
	fmt.Println("ERROR the hook never fired")
	os.Exit(2)
}

// runUntilKilled starts the helper, waits until it blocks at stage, and
// kills it with SIGKILL.
func runUntilKilled(t *testing.T, dir, stage string) {
	t.Helper()
	child, first := startChild(t, envHelperDir+"="+dir, envHelperStage+"="+stage)
	if first != "READY" {
		t.Fatalf("helper said %q, want READY", first)
	}
	killChild(t, child)
}

// startChild re-executes the test binary with env added (TestMain turns it
// into a helper process) and returns it with the first line it prints. The
// child is killed at cleanup if the test has not ended it.
func startChild(t *testing.T, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, lines := startChildLines(t, env...)
	select {
	case l := <-lines:
		return cmd, l
	case <-time.After(60 * time.Second):
		t.Fatal("the helper process printed nothing within 60s")
		return nil, ""
	}
}

// startChildLines is startChild returning every line the child prints.
func startChildLines(t *testing.T, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	done := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done: // the test stopped reading: drop the rest
			}
		}
	}()
	// The reader ends before the test does, however many lines the child
	// printed that nobody read.
	t.Cleanup(func() {
		close(done)
		cmd.Process.Kill()
		<-read
		cmd.Wait()
	})
	return cmd, lines
}

// killChild ends a child with SIGKILL and checks that is how it ended.
func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ProcessState.String() != "signal: killed" {
		t.Fatalf("helper ended with %v, want killed by SIGKILL", err)
	}
}

// assertNoBlockWithoutArchive checks the invariant a crash must keep.
func assertNoBlockWithoutArchive(t *testing.T, h *Host) {
	t.Helper()
	msgs := map[string]string{}
	for _, m := range h.Messages() {
		msgs[m.ID] = m.Text
	}
	for _, b := range h.State().Blocks {
		data, err := os.ReadFile(filepath.Join(h.Dir(), ArchiveDir, filepath.FromSlash(b.ArchiveRel)))
		if err != nil {
			t.Errorf("block %s has no archive: %v", b.BlockID, err)
			continue
		}
		for _, id := range b.DirectMessageIDs {
			if !strings.Contains(string(data), msgs[id]) {
				t.Errorf("archive of %s lacks message %s", b.BlockID, id)
			}
		}
	}
}

// mcproxy killed with SIGKILL in the middle of a Compress: after a restart
// the state is consistent, applied or not, never a block without its archive.
func TestSIGKILLMidCompress(t *testing.T) {
	t.Run("after the archives, before the transcript", func(t *testing.T) {
		dir := t.TempDir()
		runUntilKilled(t, dir, "archived")
		opts := testOptionsIn(dir)
		h := openHost(t, opts, "k")
		r := h.Report()
		if got := len(h.State().Blocks); got != 0 {
			t.Errorf("got %d blocks, want 0: the call was never recorded, so it did not happen", got)
		}
		if len(r.OrphanArchives) != 2 || r.StateMismatch {
			t.Errorf("got report %+v, want the 2 archives reported as orphans and a consistent state", r)
		}
		assertNoBlockWithoutArchive(t, h)
		// The model's retry applies, replacing the orphans.
		if res := compress(t, h, killFixtureArgs); res.IsError {
			t.Fatalf("retry after restart: %q", res.Text)
		}
		if got := len(h.State().Blocks); got != 2 {
			t.Errorf("retry: got %d blocks, want 2", got)
		}
		assertNoBlockWithoutArchive(t, h)
	})
	t.Run("after the transcript, before state.json", func(t *testing.T) {
		dir := t.TempDir()
		runUntilKilled(t, dir, "logged")
		opts := testOptionsIn(dir)
		h := openHost(t, opts, "k")
		r := h.Report()
		if !r.StateBehind || r.StateMismatch || r.Replayed != 1 || len(r.OrphanArchives) != 0 {
			t.Errorf("got report %+v, want state.json behind, brought forward, one call replayed, no orphans", r)
		}
		if got := len(h.State().Blocks); got != 2 {
			t.Errorf("got %d blocks, want 2: the call was recorded, so it happened", got)
		}
		assertNoBlockWithoutArchive(t, h)
		h.Close()
		h = openHost(t, opts, "k")
		if r := h.Report(); r.StateBehind || r.StateMismatch || r.StateMissing {
			t.Errorf("second open reported %+v, want a current state.json", r)
		}
	})
}

// concurrentHelper runs calls from four goroutines on session "c" forever,
// printing "ANSWERED <call id> <result id>" as each call's turn returns.
func concurrentHelper(dir string) {
	h, err := Open(testOptionsIn(dir), "c")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println("READY")
	var out sync.Mutex
	for w := 0; w < 4; w++ {
		go func(w int) {
			rng := newRand(int64(w))
			for {
				rec, err := h.Record(context.Background(), toolCall("fs:read", json.RawMessage(`{}`)))
				var turn Turn
				if err == nil {
					turn, err = h.Turn(context.Background(), toolResult(rec[0], words(rng, 60)))
				}
				out.Lock()
				if err != nil {
					fmt.Println("ERROR", err)
					os.Exit(2)
				}
				fmt.Println("ANSWERED", rec[0].ID, turn.Recorded[0].ID)
				out.Unlock()
			}
		}(w)
	}
	select {}
}

// mcproxy killed with SIGKILL while calls of one session run concurrently
// (their fsyncs shared): every call answered before the kill is in the
// transcript after a restart, and the session opens consistent.
func TestSIGKILLConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	cmd, lines := startChildLines(t, envHelperDir+"="+dir, envHelperStage+"=concurrent")
	var answered []string
	for len(answered) < 2*60 {
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the helper stopped after %d answers", len(answered)/2)
			}
			line = l
		case <-time.After(60 * time.Second):
			t.Fatalf("the helper answered %d calls in 60s", len(answered)/2)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "READY":
		case len(f) == 3 && f[0] == "ANSWERED":
			answered = append(answered, f[1], f[2])
		default:
			t.Fatalf("helper said %q", line)
		}
	}
	killChild(t, cmd)
	h := openHost(t, testOptionsIn(dir), "c")
	if r := h.Report(); r.StateMismatch || len(r.MissingArchives) > 0 {
		t.Errorf("reopening reported %+v, want a consistent session", r)
	}
	have := map[string]bool{}
	for _, m := range h.Messages() {
		have[m.ID] = true
	}
	for _, id := range answered {
		if !have[id] {
			t.Errorf("message %s was answered before the kill but is not in the transcript", id)
		}
	}
}
