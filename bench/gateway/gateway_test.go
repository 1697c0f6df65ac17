package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
)

// small is a replay quick enough for every test run, shaped like the
// default one: files small beside the window, which the conversation
// outgrows about twice over.
var small = Options{Window: 20000, Scenario: gatewaytest.ScenarioOptions{Tasks: 24, FilesPerTask: 3, MinFileBytes: 600, MaxFileBytes: 2400, Facts: 3, Questions: 4, Seed: 3}}

func TestReplayMeetsAcceptanceAndRepeats(t *testing.T) {
	first, err := Run(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range first.Acceptance {
		if !c.Pass {
			t.Errorf("%s: got %s, want %s", c.Name, c.Got, c.Want)
		}
	}
	tot := first.Totals
	if tot.CompressCalls == 0 || tot.HiddenRounds == 0 || tot.UnmanagedTokens <= tot.ForwardedTokens {
		t.Errorf("totals %+v: want Compress calls answered in hidden rounds and fewer tokens forwarded", tot)
	}
	if tot.PeakUnmanaged <= first.Window {
		t.Errorf("the unmanaged conversation peaked at %d tokens, within the %d window: the replay must outgrow it", tot.PeakUnmanaged, first.Window)
	}
	archived := 0
	for _, q := range first.Questions {
		if q.Via == "read_archive" {
			archived++
		}
	}
	if archived == 0 {
		t.Errorf("no question needed read_archive; the replay must ask for compressed facts")
	}
	if len(first.Turns) != tot.Requests || first.Turns[len(first.Turns)-1].Unmanaged != tot.PeakUnmanaged {
		t.Errorf("got %d turns for %d requests, the last at %d tokens (peak %d)", len(first.Turns), tot.Requests, first.Turns[len(first.Turns)-1].Unmanaged, tot.PeakUnmanaged)
	}

	second, err := Run(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := first.JSON()
	b, _ := second.JSON()
	if !bytes.Equal(a, b) {
		t.Errorf("two runs of the same options differ")
	}
	if first.Markdown() != second.Markdown() || first.SVG() != second.SVG() {
		t.Errorf("two runs render differently")
	}
}

func TestMainWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"--out", dir, "--quiet", "--window", "8000", "--tasks", "6", "--files-per-task", "2", "--min-file-bytes", "600",
		"--max-file-bytes", "2400", "--facts", "2", "--seed", "3"}
	code := Main(context.Background(), args, &out, &errb)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep Report
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
	if code := Main(context.Background(), []string{"--tasks"}, &out, &errb); code != 2 {
		t.Errorf("a flag without its value: exit %d, want 2", code)
	}
}
