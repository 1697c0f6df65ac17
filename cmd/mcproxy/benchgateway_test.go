package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gatewaybench "github.com/mcproxy/mcproxy/bench/gateway"
)

// TestBenchGatewayWritesTheReport runs `mcproxy bench gateway` on a small
// scenario: the three report files, the command that reproduces them, and an
// exit code that says whether every acceptance criterion held.
func TestBenchGatewayWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"--out", dir, "--quiet", "--window", "8000", "--tasks", "6", "--files-per-task", "2", "--min-file-bytes", "600",
		"--max-file-bytes", "2400", "--facts", "2", "--seed", "3"}
	code := runBench(context.Background(), append([]string{"gateway"}, args...), &out, &errb)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep gatewaybench.Report
	for _, name := range []string{"report.json", "report.md", "report.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case "report.json":
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.GeneratedAt == "" || rep.Totals.Questions != 2 {
				t.Errorf("report.json: generated at %q, %d questions; want a timestamp and each of the 2 facts asked once", rep.GeneratedAt, rep.Totals.Questions)
			}
		case "report.svg":
			if err := xml.Unmarshal(b, new(struct{})); err != nil {
				t.Errorf("report.svg is not XML: %v", err)
			}
			if strings.Count(string(b), "<polyline") != 2 {
				t.Errorf("report.svg should draw two lines")
			}
		case "report.md":
			if !strings.Contains(string(b), "| later questions answered | 2 of 2 |") {
				t.Errorf("report.md lacks the acceptance table:\n%s", b)
			}
			if !strings.Contains(string(b), "`mcproxy bench gateway --tasks 6 --files-per-task 2 --min-file-bytes 600 --max-file-bytes 2400 --facts 2 --questions 2 --seed 3 --window 8000`") {
				t.Errorf("report.md does not name the command that reproduces it:\n%s", b)
			}
		}
	}
	if want := map[bool]int{true: 0, false: 1}[rep.Pass()]; code != want {
		t.Errorf("exit %d with acceptance %v, want %d", code, rep.Pass(), want)
	}
	if code := runBench(context.Background(), []string{"gateway", "--tasks"}, &out, &errb); code != 2 {
		t.Errorf("a flag without its value: exit %d, want 2", code)
	}
}
