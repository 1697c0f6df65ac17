package main

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode fails when the mcproxy binary links test code:
// the standard library's testing packages and net/http/httptest, or any
// package of ours or a library's in a directory named *test (gatewaytest,
// mcptest, zaptest: test support, whose helpers take a *testing.T). Test
// code in the binary is dead weight at best and, at worst, a helper meant
// to fail a test running in production. It names the import chain that
// pulls the package in, so the fix is plain.
func TestBinaryLinksNoTestCode(t *testing.T) {
	const main = "github.com/mcproxy/mcproxy/cmd/mcproxy"
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", main)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", main, err, stderr.String())
	}
	imports := map[string][]string{}
	var banned []string
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q, want path, standard and imports", line)
		}
		path, std := f[0], f[1] == "true"
		imports[path] = strings.Fields(f[2])
		if testCode(path, std) {
			banned = append(banned, path)
		}
	}
	// Guard against a vacuous pass: the listing must hold the binary and
	// what it surely links.
	if _, ok := imports[main]; !ok || imports["net/http"] == nil {
		t.Fatalf("go list -deps lacks %s or net/http; got %d packages", main, len(imports))
	}
	for _, p := range banned {
		t.Errorf("the binary links test code %s through %s; move what the binary needs out of the test-support package",
			p, strings.Join(chain(imports, main, p), " -> "))
	}
}

// testCode reports whether path is test support: std's testing tree and
// httptest, or a non-standard package under a directory ending in "test".
// The standard library's internal/synctest is not: sync links it for
// testing/synctest's bubbles, in every Go binary.
func testCode(path string, std bool) bool {
	if std {
		return path == "testing" || strings.HasPrefix(path, "testing/") || path == "net/http/httptest"
	}
	return slices.ContainsFunc(strings.Split(path, "/"), func(elem string) bool { return strings.HasSuffix(elem, "test") })
}

// chain is a shortest import path from "from" to "to" (breadth first, in
// go list's sorted order, so the same graph names the same chain).
func chain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var out []string
			for ; p != ""; p = prev[p] {
				out = append(out, p)
			}
			slices.Reverse(out)
			return out
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{from, "?", to}
}
