package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// TestBenchImport converts a small mini-swe-agent run of ours with `mcproxy
// bench import` and reads it back the way `mcproxy bench gateway` does.
func TestBenchImport(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "run.traj.json")
	const run = `{"instance_id": "toy__one-1", "info": {"mini_version": "1.2.3", "config": {"model": {"model_name": "acme/toy"}}},
 "messages": [
  {"role": "system", "content": "Answer with one fenced bash block."},
  {"role": "user", "content": "List the files."},
  {"role": "assistant", "content": "Look.\n` + "```bash\\nls -a\\n```" + `"},
  {"role": "user", "content": "a.txt"},
  {"role": "assistant", "content": "Done.\n` + "```bash\\necho submit\\n```" + `"},
  {"role": "user", "content": "submitted"}]}`
	if err := os.WriteFile(src, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	bench := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runBench(context.Background(), append([]string{"import", "--trajectories", runs}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, errs := bench("--id", "toy.one", "--source", "acme/agent@abc:run.traj.json", src)
	if code != exitOK || !strings.Contains(out, filepath.Join(runs, "toy.one"+trajectory.Ext)+": mini-swe-agent 1.2.3, toy; steps 2,") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the file written with its steps", code, out, errs)
	}
	tr, err := trajectory.Open(trajectory.Options{Dir: runs}).Load("toy.one")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Source != "acme/agent@abc:run.traj.json" || tr.Task != "toy__one-1" || len(tr.Steps) != 2 || tr.Steps[0].Results[0] != "a.txt" {
		t.Errorf("stored run: source %q, task %q, steps %+v", tr.Source, tr.Task, tr.Steps)
	}

	if code, _, errs := bench("--id", "toy.one", src); code != exitError || !strings.Contains(errs, "--replace") {
		t.Errorf("importing over a stored run: exit %d, stderr %q; want 1 and a hint at --replace", code, errs)
	}
	if code, _, errs := bench("--id", "toy.one", "--replace", src); code != exitOK {
		t.Errorf("with --replace: exit %d, stderr %q; want 0", code, errs)
	}
	if code, _, errs := bench("--format", "nope", src); code != exitError || !strings.Contains(errs, trajectory.FormatOpenHands) {
		t.Errorf("an unknown format: exit %d, stderr %q; want 1 and the formats named", code, errs)
	}
}
