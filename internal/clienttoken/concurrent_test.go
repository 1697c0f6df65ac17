package clienttoken

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

func TestMain(m *testing.M) {
	// A helper process of TestConcurrentCreateProcesses: create tokens in
	// the data dir it is given, then exit.
	if dir := os.Getenv(helperDirEnv); dir != "" {
		os.Exit(createMany(dir, os.Getenv(helperPrefixEnv)))
	}
	testenv.VerifyNoLeaks(m)
}

const (
	helperDirEnv    = "CLIENTTOKEN_HELPER_DIR"
	helperPrefixEnv = "CLIENTTOKEN_HELPER_PREFIX"
	perWriter       = 10
)

// createMany creates perWriter tokens named prefix-N in dir, each through
// a store of its own (as separate `mcproxy tokens create` runs would).
func createMany(dir, prefix string) int {
	for i := range perWriter {
		f, err := Open(dir, Options{})
		if err == nil {
			_, _, err = f.Create(context.Background(), fmt.Sprintf("%s-%d", prefix, i), []string{"p"}, time.Time{})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// wantAll checks that every writer's every token is in dir's file.
func wantAll(t *testing.T, dir string, writers int) {
	t.Helper()
	f, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, tok := range list {
		have[tok.Name] = true
	}
	for w := range writers {
		for i := range perWriter {
			if name := fmt.Sprintf("w%d-%d", w, i); !have[name] {
				t.Errorf("token %s was lost (%d of %d kept)", name, len(list), writers*perWriter)
			}
		}
	}
}

// Writers in one process, each with its own store on the same file, as a
// serving mcproxy and a tokens command are: none loses another's token.
func TestConcurrentCreateGoroutines(t *testing.T) {
	dir := t.TempDir()
	const writers = 8
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			if code := createMany(dir, fmt.Sprintf("w%d", w)); code != 0 {
				t.Errorf("writer %d failed", w)
			}
		})
	}
	wg.Wait()
	wantAll(t, dir, writers)
}

// Several processes creating tokens at once (concurrent `mcproxy tokens
// create` runs): every token survives.
func TestConcurrentCreateProcesses(t *testing.T) {
	dir := t.TempDir()
	const writers = 6
	var wg sync.WaitGroup
	for w := range writers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, fmt.Sprintf("%s=w%d", helperPrefixEnv, w))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer process %d: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	wantAll(t, dir, writers)
}
