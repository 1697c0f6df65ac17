package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gatewaybench "github.com/mcproxy/mcproxy/bench/gateway"
	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// TestBenchGatewayWritesTheReport runs `mcproxy bench gateway` on a small
// run of ours: the report files, the command that reproduces them, and an
// exit code that says whether every acceptance criterion held.
func TestBenchGatewayWritesTheReport(t *testing.T) {
	runs := t.TempDir()
	tr := &trajectory.Trajectory{ID: "tiny", Agent: "bash agent (synthetic)", Model: "scripted-model", Task: "tiny", TaskMessage: "List the files.",
		Tools: []trajectory.Tool{{Name: "bash", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	for i := 0; i < 4; i++ {
		args, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("ls dir%d", i)})
		tr.Steps = append(tr.Steps, trajectory.Step{Calls: []trajectory.Call{{Name: "bash", Arguments: args}}, Results: []string{"a.txt b.txt"}})
	}
	tr.Steps = append(tr.Steps, trajectory.Step{Text: "Done."})
	data, _ := json.Marshal(tr)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(filepath.Join(runs, "tiny"+trajectory.Ext), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"--out", dir, "--quiet", "--trajectories", runs, "--windows", "8000", "--no-session"}
	code := runBench(context.Background(), append([]string{"gateway"}, args...), &out, &errb)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep gatewaybench.Report
	for _, name := range []string{"report.json", "report.md", "report.svg", "charts/tiny.8000.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case name == "report.json":
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.GeneratedAt == "" || len(rep.Cases) != 1 {
				t.Errorf("report.json: generated at %q, %d cases; want a timestamp and one case", rep.GeneratedAt, len(rep.Cases))
			}
		case strings.HasSuffix(name, ".svg"):
			if err := xml.Unmarshal(b, new(struct{})); err != nil {
				t.Errorf("%s is not XML: %v", name, err)
			}
			if got := strings.Count(string(b), "<polyline"); got != len(gatewaybench.Policies) {
				t.Errorf("%s draws %d lines, want one per policy (%d)", name, got, len(gatewaybench.Policies))
			}
		case name == "report.md":
			if !strings.Contains(string(b), "`mcproxy bench gateway --windows 8000 --no-session`") {
				t.Errorf("report.md does not name the command that reproduces it:\n%s", b)
			}
		}
	}
	if want := map[bool]int{true: 0, false: 1}[rep.Pass()]; code != want {
		t.Errorf("exit %d with acceptance %v, want %d", code, rep.Pass(), want)
	}
	if code := runBench(context.Background(), []string{"gateway", "--windows"}, &out, &errb); code != 2 {
		t.Errorf("a flag without its value: exit %d, want 2", code)
	}
	errb.Reset()
	empty := t.TempDir()
	if code := runBench(context.Background(), []string{"gateway", "--quiet", "--trajectories", empty}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), empty) || !strings.Contains(errb.String(), trajectory.DirEnv) {
		t.Errorf("no runs: exit %d, %q; want 1 and a message naming %s and $%s", code, errb.String(), empty, trajectory.DirEnv)
	}
}
