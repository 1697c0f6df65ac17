package arms

import (
	"encoding/json"
	"testing"
)

func TestRunToonResults(t *testing.T) {
	set, err := ParseResultFixtures(loadFixtureBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	run, err := RunToonResults(proxyTokens{}, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Rows) != 2 || run.Rows[0].Name != BaselineName || run.Rows[1].Name != ToonResultsName {
		t.Fatalf("got rows %v, want baseline_json then toon_results", run.Rows)
	}
	base, tr := run.Rows[0], run.Rows[1]
	if base.Items != 6 || tr.Items != 6 || len(tr.Skipped) != 0 {
		t.Errorf("got %d and %d items (%v skipped), want 6 each", base.Items, tr.Items, tr.Skipped)
	}
	if base.SavingsPct != 0 || base.BaselineTokens != base.TotalTokens {
		t.Errorf("baseline row is not its own reference: %v", base)
	}
	if tr.BaselineTokens != base.TotalTokens {
		t.Errorf("toon row baseline %d, want the baseline row's total %d", tr.BaselineTokens, base.TotalTokens)
	}
	if got, want := run.TabularToonTokens+run.NonTabularToonTokens, tr.TotalTokens; got != want {
		t.Errorf("class split of TOON sums to %d, want %d", got, want)
	}
	if got, want := run.TabularBaselineTokens+run.NonTabularBaselineTokens, base.TotalTokens; got != want {
		t.Errorf("class split of the baseline sums to %d, want %d", got, want)
	}
	if run.TabularBaselineTokens == 0 || run.NonTabularBaselineTokens == 0 {
		t.Errorf("a class is empty: %+v", run)
	}
	// TOON's whole point: a uniform table costs less than JSON.
	if run.TabularSavingsPct() <= 0 {
		t.Errorf("TOON saves %.1f%% on tabular payloads, want a saving", run.TabularSavingsPct())
	}
	t.Logf("toon_results: total %.1f%%, tabular %.1f%%, non-tabular %.1f%% (proxy counter)",
		tr.SavingsPct, run.TabularSavingsPct(), run.NonTabularSavingsPct())

	again, err := RunToonResults(proxyTokens{}, set)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(run)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Errorf("second run differs:\n%s\n%s", a, b)
	}
}

func TestRunToonResultsHandExample(t *testing.T) {
	set := &ResultFixtureSet{Captured: "x", FixtureID: "y", Results: []ResultFixture{
		{ToolID: "db:q", PayloadClassHint: PayloadClassTabular, Payload: json.RawMessage(`[{"id":1,"n":"a"},{"n":"b","id":2}]`)},
	}}
	run, err := RunToonResults(bytesCounter{}, set)
	if err != nil {
		t.Fatal(err)
	}
	// canonical JSON: [{"id":1,"n":"a"},{"id":2,"n":"b"}] = 35 bytes;
	// TOON: "[2]{id,n}:\n  1,a\n  2,b" = 22 bytes.
	if run.TabularBaselineTokens != 35 || run.TabularToonTokens != 22 {
		t.Errorf("got baseline %d and TOON %d bytes, want 35 and 22", run.TabularBaselineTokens, run.TabularToonTokens)
	}
	if _, err := RunToonResults(bytesCounter{}, &ResultFixtureSet{}); err == nil {
		t.Error("RunToonResults on an empty set: got nil, want an error")
	}
}

type bytesCounter struct{}

func (bytesCounter) Count(s string) int { return len(s) }
