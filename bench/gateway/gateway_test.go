package gateway

import (
	"bytes"
	"context"
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
