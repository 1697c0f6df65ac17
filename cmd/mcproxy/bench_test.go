package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/bench"
	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// runBenchCLI runs `mcproxy bench` with args and returns its exit code,
// stdout and stderr. HOME is an empty directory, so defaults under
// ~/.mcproxy (the word-embeddings file that turns query expansion on) are
// never the developer's own.
func runBenchCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"bench"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantText string // in stdout or stderr
	}{
		{"help", []string{"help"}, 0, "usage: mcproxy bench"},
		{"run -h", []string{"run", "-h"}, 0, "-tokenizer"},
		{"unknown subcommand", []string{"bogus"}, 2, `unknown subcommand "bogus"`},
		{"unknown flag", []string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{"bad tokenizer", []string{"--tokenizer", "p50k_base"}, 2, "--tokenizer"},
		{"unknown arm", []string{"--arms", "compact_sig,nope"}, 2, `unknown arm "nope"`},
		{"stray argument", []string{"run", "extra"}, 2, "unexpected arguments"},
		{"capture without flags", []string{"capture"}, 2, "--config and --out are both required"},
		{"import -h", []string{"import", "-h"}, 0, "-instance"},
		{"import without a file", []string{"import"}, 2, "want one source file"},
		{"missing corpus", []string{"--corpus", "/nonexistent/c.json", "--fixtures", "none"}, 1, "reading corpus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runBenchCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tc.wantCode, errs)
			}
			if !strings.Contains(out+errs, tc.wantText) {
				t.Errorf("output does not mention %q:\nstdout: %s\nstderr: %s", tc.wantText, out, errs)
			}
		})
	}
}

func TestBenchQueriesMustMatchACorpus(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "q.json")
	if err := os.WriteFile(q, []byte(`{"corpus_version":"other@1","queries":[{"id":"a","query":"x","labels":[{"tool_id":"s:t","relevance":2}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runBenchCLI(t, "--corpus", filepath.Join(testenv.Datasets(t), bench.CorpusV2File), "--queries", q, "--fixtures", "none", "--quiet")
	if code != 1 || !strings.Contains(errs, `grades corpus_version "other@1"`) {
		t.Fatalf("got code %d, stderr %q; want 1 and a corpus_version mismatch", code, errs)
	}
	// Labels naming tools the corpus lacks are refused too.
	if err := os.WriteFile(q, []byte(`{"corpus_version":"corpus_v2@2026-07-14","queries":[{"id":"a","query":"x","labels":[{"tool_id":"git:git_push","relevance":2}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runBenchCLI(t, "--corpus", filepath.Join(testenv.Datasets(t), bench.CorpusV2File), "--queries", q, "--fixtures", "none", "--quiet")
	if code != 1 || !strings.Contains(errs, `unknown tool "git:git_push"`) {
		t.Fatalf("got code %d, stderr %q; want 1 and an unknown tool", code, errs)
	}
}

// TestCorpusAlone runs the profiler the way a user measures their own
// servers: --corpus and nothing else. It needs no fixtures file; the report
// says toon_results was skipped.
func TestBenchCorpusAlone(t *testing.T) {
	rep, _ := runReport(t, "--corpus", "mine="+filepath.Join(testenv.Datasets(t), bench.CorpusV2File), "--expansion", "none", "--no-discovery", "--quiet")
	if rep.ToonResults != nil {
		t.Errorf("toon_results measured without a fixtures file: %+v", rep.ToonResults)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "toon_results: skipped") {
		t.Errorf("notes %q do not say toon_results was skipped", rep.Notes)
	}
	if len(rep.Corpora) != 1 || rep.Corpora[0].Name != "mine" || rep.Corpora[0].Tools != 45 {
		t.Errorf("corpora: got %+v, want mine with 45 tools", rep.Corpora)
	}
}

// TestExplicitArm asks for tscg by name: where its runtime is missing the
// arm gets a row saying why instead of failing the run.
func TestBenchExplicitArm(t *testing.T) {
	_, unavailable := bench.Registry().Resolve(arms.TSCGName)
	rep, _ := runReport(t, "--corpus", filepath.Join(testenv.Datasets(t), bench.CorpusV2File), "--arms", "compact_sig,tscg", "--expansion", "none", "--no-discovery", "--quiet")
	tscg, _ := rep.Row("corpus_v2", arms.TSCGName)
	switch {
	case unavailable == nil && tscg.Status == bench.StatusUnavailable:
		t.Errorf("tscg resolves here, yet its row says %q", tscg.UnavailableReason)
	case unavailable != nil && (tscg.Status != bench.StatusUnavailable || !strings.Contains(tscg.UnavailableReason, "@tscg/core")):
		t.Errorf("tscg row: got status %q reason %q, want an unavailable row naming the missing package", tscg.Status, tscg.UnavailableReason)
	}
}

// TestRunReport runs the profiler on corpus_v2 twice, end to end with the
// real tokenizer, index and MCP front, and checks the report's content and
// that the two runs agree byte for byte but for the timestamp.
func TestBenchRunReport(t *testing.T) {
	ds := testenv.Datasets(t)
	base := t.TempDir()
	var reports [2]map[string][]byte
	var progress string
	for i := range reports {
		out := filepath.Join(base, []string{"a", "b"}[i])
		code, stdout, stderr := runBenchCLI(t, "run", "--corpus", "corpus_v2="+filepath.Join(ds, bench.CorpusV2File),
			"--fixtures", filepath.Join(ds, bench.ResultFixturesFile), "--expansion", "none", "--out", out)
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstderr: %s", i, code, stderr)
		}
		if !strings.Contains(stdout, "report.json") {
			t.Errorf("stdout %q does not name the written files", stdout)
		}
		progress = stderr
		reports[i] = map[string][]byte{}
		for _, f := range []string{"report.json", "report.md", "report.svg"} {
			data, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			reports[i][f] = data
		}
	}
	if !strings.Contains(progress, "bench: corpus_v2: compact_sig: retrieval quality") {
		t.Errorf("no progress on stderr:\n%s", progress)
	}
	for f := range reports[0] {
		a, b := dropTimestamp(reports[0][f]), dropTimestamp(reports[1][f])
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", f)
		}
	}

	var rep bench.Report
	if err := json.Unmarshal(reports[0]["report.json"], &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SchemaVersion != bench.SchemaVersion || rep.Tokenizer != "cl100k_base" || rep.GeneratedAt == "" {
		t.Errorf("header: got schema %d tokenizer %q generated %q", rep.SchemaVersion, rep.Tokenizer, rep.GeneratedAt)
	}
	// tscg is measured when its npm package is installed, and otherwise left
	// out with one note saying how to add it.
	wantArms := []string{arms.BaselineName, arms.CompactName, arms.BriefName, arms.ToonListingName, arms.TronName, arms.TSCGName}
	if _, err := bench.Registry().Resolve(arms.TSCGName); err != nil {
		wantArms = wantArms[:len(wantArms)-1]
		var tscgNotes []string
		for _, n := range rep.Notes {
			if strings.HasPrefix(n, "tscg: left out of the default arms: ") {
				tscgNotes = append(tscgNotes, n)
			}
		}
		if len(tscgNotes) != 1 || strings.Contains(tscgNotes[0], "\n") || !strings.Contains(tscgNotes[0], "--arms") {
			t.Errorf("got tscg notes %q, want one line saying how to add it", tscgNotes)
		}
	}
	if len(rep.Arms) != len(wantArms) {
		t.Fatalf("got %d arm rows, want %d", len(rep.Arms), len(wantArms))
	}
	for i, a := range rep.Arms {
		if a.Name != wantArms[i] || a.Corpus != "corpus_v2" {
			t.Errorf("row %d: got %s/%s, want %s/corpus_v2", i, a.Name, a.Corpus, wantArms[i])
		}
		if a.Status == bench.StatusUnavailable {
			if a.UnavailableReason == "" {
				t.Errorf("%s: skipped without a reason", a.Name)
			}
			continue
		}
		if a.Tools != 45 || a.ListingTokens <= 0 || a.TotalTokens <= 0 {
			t.Errorf("%s: got %d tools, listing %d, total %d", a.Name, a.Tools, a.ListingTokens, a.TotalTokens)
		}
		if !a.IndexAltering && a.Name != arms.BaselineName {
			// The index sees the baseline's metadata: its quality is the
			// baseline row's, not measured again.
			if a.Quality != nil {
				t.Errorf("%s: quality measured for an arm that does not alter the index", a.Name)
			}
			continue
		}
		if a.Quality == nil || a.Quality.Queries != 103 || a.QualityBySplit[bench.SplitTune].Queries+a.QualityBySplit[bench.SplitHeldout].Queries != 103 {
			t.Errorf("%s: quality missing or incomplete: %+v %+v", a.Name, a.Quality, a.QualityBySplit)
		}
	}
	// The issues' bars: compact_sig's (issue 4) and the default arm's
	// (issue 17).
	if c, _ := rep.Row("corpus_v2", arms.CompactName); c.ListingSavingsPct < 50 {
		t.Errorf("compact_sig listing savings on corpus_v2: got %.1f%%, want at least 50%%", c.ListingSavingsPct)
	}
	if c, _ := rep.Row("corpus_v2", config.DefaultArm); c.ListingSavingsPct < 60 {
		t.Errorf("%s listing savings on corpus_v2: got %.1f%%, want at least 60%%", config.DefaultArm, c.ListingSavingsPct)
	}
	if b, _ := rep.Row("corpus_v2", arms.BaselineName); b.SavingsPct != 0 || b.ListingTokens != b.BaselineListingTokens {
		t.Errorf("baseline row: savings %.2f, listing %d vs %d; want 0 and equal", b.SavingsPct, b.ListingTokens, b.BaselineListingTokens)
	}
	if len(rep.Discovery) != 5 {
		t.Errorf("discovery rows: got %d, want one per available listing arm (5)", len(rep.Discovery))
	}
	for _, d := range rep.Discovery {
		if d.MenuTokens <= 0 || d.UpfrontTokens <= d.MenuTokens || len(d.Answers) != 2 || d.Answers[0].P50 <= 0 || d.Answers[1].Mean < d.Answers[0].Mean {
			t.Errorf("discovery %s: implausible figures %+v", d.Arm, d)
		}
		if d.Arm == config.DefaultArm && (d.Answers[0].Limit != 5 || d.Answers[0].P50 > 300) {
			t.Errorf("discovery %s: answer@%d p50 %d tokens, want at most 300 at limit 5", d.Arm, d.Answers[0].Limit, d.Answers[0].P50)
		}
	}
	if len(rep.Sessions) != 1 {
		t.Fatalf("session rows: got %d, want 1", len(rep.Sessions))
	}
	if sr := rep.Sessions[0]; sr.Arm != config.DefaultArm || sr.NoaOn.Tokens > 800 || sr.NoaOn.Tokens <= sr.NoaOff.Tokens ||
		sr.NoaOn.Tools != 5 || sr.NoaOff.Tools != 3 || sr.LaterNudgeTokens <= 0 || sr.LaterNudgeTokens > 250 ||
		sr.FirstNudgeTokens <= sr.LaterNudgeTokens || sr.RefTagTokens <= 0 || sr.Describe.P50 <= 0 {
		t.Errorf("session costs: got %+v; want the default arm, a menu of at most 800 tokens with noa on (5 tools, 3 without), a later nudge of at most 250 below the first", sr)
	}
	if rep.ToonResults == nil || len(rep.ToonResults.Rows) != 2 {
		t.Errorf("toon_results: got %+v, want two rows", rep.ToonResults)
	}
	md := string(reports[0]["report.md"])
	for _, want := range []string{"## Tokens: corpus_v2", "## Retrieval quality: corpus_v2", "## Discovery cost: corpus_v2", "## Session costs", "TOON vs compact JSON"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	svg := string(reports[0]["report.svg"])
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "compact_sig") || !strings.HasSuffix(svg, "</svg>\n") {
		t.Errorf("report.svg is not a complete SVG naming the arms")
	}
}

// dropTimestamp removes the one line that may differ between runs.
func dropTimestamp(data []byte) []byte {
	var keep [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(line, []byte(`"generated_at"`)) || bytes.HasPrefix(line, []byte("Generated ")) {
			continue
		}
		keep = append(keep, line)
	}
	return bytes.Join(keep, []byte("\n"))
}

// TestCapture captures the reference memory server's tools through the real
// upstream manager and checks they load back as a canonical corpus.
func TestBenchCapture(t *testing.T) {
	bin := testenv.NodeBin(t, "mcp-server-memory")
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"memory": map[string]any{"command": bin, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
		},
		"data_dir": filepath.Join(dir, "data"),
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "captured.json")
	code, stdout, stderr := runBenchCLI(t, "capture", "--config", cfgPath, "--out", out, "--version", "memory@test")
	if code != 0 {
		t.Fatalf("capture: exit %d\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stdout, "captured") {
		t.Errorf("stdout %q does not report the capture", stdout)
	}
	c, err := bench.LoadCorpus(out, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != "memory@test" || len(c.Servers()) != 1 || c.Servers()[0] != "memory" {
		t.Errorf("got version %q servers %v, want memory@test and [memory]", c.Version, c.Servers())
	}
	if !c.IDs()["memory:create_entities"] || !c.IDs()["memory:read_graph"] {
		t.Errorf("captured tools %v lack the memory server's create_entities/read_graph", c.IDs())
	}
	for _, tool := range c.Tools {
		if len(tool.Schema) == 0 {
			t.Errorf("%s: captured without its input schema", tool.ID)
		}
	}
	// The captured corpus can be profiled like a frozen one.
	code, _, stderr = runBenchCLI(t, "--corpus", out, "--fixtures", "none", "--no-discovery", "--arms", "compact_sig", "--quiet", "--out", filepath.Join(dir, "report"))
	if code != 0 {
		t.Fatalf("profiling the captured corpus: exit %d\nstderr: %s", code, stderr)
	}
	js, err := os.ReadFile(filepath.Join(dir, "report", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Arms) != 2 || rep.Arms[1].Name != "compact_sig" || rep.Arms[1].Tools != len(c.Tools) {
		t.Errorf("arms of the captured corpus: got %+v, want baseline_json and compact_sig over %d tools", rep.Arms, len(c.Tools))
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], `no query set with corpus_version "memory@test"`) {
		t.Errorf("notes: got %q, want one saying the captured corpus has no query set", rep.Notes)
	}
}

// runDenseAblation runs the ablation on corpus_v2 with the embeddings
// provider at url and returns the report and its raw JSON.
func runDenseAblation(t *testing.T, url string) (bench.Report, []byte, string) {
	t.Helper()
	ds := testenv.Datasets(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	body, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   dataDir,
		"embeddings": map[string]any{"url": url, "model": "toy-embed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, body, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, raw := runAblation(t, ds, "--config", cfg)
	return rep, raw, dataDir
}

// runAblation runs the profiler with the ablation on corpus_v2 (baseline
// arm, no fixtures, discovery or expansion) plus extra flags, and returns
// the report and its raw JSON.
func runAblation(t *testing.T, ds string, extra ...string) (bench.Report, []byte) {
	t.Helper()
	return runReport(t, append([]string{"run", "--corpus", "corpus_v2=" + filepath.Join(ds, bench.CorpusV2File), "--arms", "baseline_json",
		"--fixtures", "none", "--no-discovery", "--expansion", "none", "--ablation"}, extra...)...)
}

func ablationRow(t *testing.T, rep bench.Report, variant string) bench.AblationRow {
	t.Helper()
	for _, r := range rep.Ablation {
		if r.Variant == variant {
			return r
		}
	}
	t.Fatalf("no ablation row %q", variant)
	return bench.AblationRow{}
}

// TestAblationDense measures the dense rows against a real HTTP embeddings
// server (our toy model, internal/embed/embedtest): both rows are scored on
// both halves, differ from BM25 alone, are deterministic, and the vectors
// land in the config's data_dir cache.
func TestBenchAblationDense(t *testing.T) {
	srv := embedtest.New(embedtest.Options{Model: "toy-embed"})
	t.Cleanup(srv.Close)
	rep, raw, dataDir := runDenseAblation(t, srv.URL)

	prod := ablationRow(t, rep, "production")
	for _, v := range []string{"+dense", "dense-only"} {
		r := ablationRow(t, rep, v)
		if r.Status != bench.StatusMeasured || r.Quality == nil || len(r.QualityBySplit) != 2 {
			t.Fatalf("%s: got status %q (%s), %d splits; want measured on tune and heldout", v, r.Status, r.UnavailableReason, len(r.QualityBySplit))
		}
		if r.Quality.Queries != prod.Quality.Queries {
			t.Errorf("%s: got %d queries, want %d", v, r.Quality.Queries, prod.Quality.Queries)
		}
		if *r.Quality == *prod.Quality {
			t.Errorf("%s scored exactly like production: dense retrieval did not reach the ranking", v)
		}
		if !strings.Contains(r.Change, "model toy-embed") {
			t.Errorf("%s: change %q does not name the model", v, r.Change)
		}
	}
	if d, f := ablationRow(t, rep, "dense-only"), ablationRow(t, rep, "+dense"); *d.Quality == *f.Quality {
		t.Error("dense-only and +dense scored the same: the fused row did not fuse")
	}
	cached, err := os.ReadDir(filepath.Join(dataDir, "embeddings-cache"))
	if err != nil || len(cached) == 0 {
		t.Errorf("vector cache under data_dir: %d entries, err %v; want the tools' vectors", len(cached), err)
	}

	// Same provider, same vectors (now from the cache): the same report.
	_, again, _ := runDenseAblation(t, srv.URL)
	if !bytes.Equal(dropTimestamp(raw), dropTimestamp(again)) {
		t.Error("report.json differs between two runs with the same provider")
	}
}

// TestAblationDenseProviderFails: a provider answering 500 makes the dense
// rows unavailable with the reason; every other row is still measured.
func TestBenchAblationDenseProviderFails(t *testing.T) {
	srv := embedtest.New(embedtest.Options{})
	t.Cleanup(srv.Close)
	srv.SetFault(embedtest.Status500)
	rep, _, _ := runDenseAblation(t, srv.URL)
	for _, v := range []string{"+dense", "dense-only"} {
		r := ablationRow(t, rep, v)
		if r.Status != bench.StatusUnavailable || !strings.Contains(r.UnavailableReason, "embeddings provider failed") || !strings.Contains(r.UnavailableReason, "500") {
			t.Errorf("%s: got status %q reason %q, want unavailable naming the provider's 500", v, r.Status, r.UnavailableReason)
		}
	}
	if r := ablationRow(t, rep, "-params"); r.Status != bench.StatusMeasured {
		t.Errorf("-params: got status %q, want the other rows measured", r.Status)
	}
}

// TestConfigRetrievalSettings: --config brings the config's synonym groups
// into every index the run builds (a query whose only word is a user
// synonym finds its tool with the config and nothing without it), and a
// config whose embeddings section is off leaves the dense rows unmeasured
// with that reason. A config that cannot be loaded is a usage error.
func TestBenchConfigRetrievalSettings(t *testing.T) {
	ds := testenv.Datasets(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}, "synonyms": [["dossier", "directory"]]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	queries := filepath.Join(dir, "queries.json")
	if err := os.WriteFile(queries, []byte(`{"corpus_version": "corpus_v2@2026-07-14", "queries": [
		{"id": "q1", "query": "dossier", "labels": [{"tool_id": "filesystem:create_directory", "relevance": 2}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) bench.Report {
		t.Helper()
		rep, _ := runAblation(t, ds, append([]string{"--queries", queries}, extra...)...)
		return rep
	}
	with, without := run("--config", cfg), run()
	if with.UserSynonymGroups != 1 || without.UserSynonymGroups != 0 {
		t.Errorf("user_synonym_groups: got %d with --config and %d without, want 1 and 0", with.UserSynonymGroups, without.UserSynonymGroups)
	}
	if r, ok := with.Row("corpus_v2", "baseline_json"); !ok || r.Quality == nil || r.Quality.MRR == 0 {
		t.Errorf("with the config's [dossier directory]: got %+v, want create_directory ranked", r.Quality)
	}
	if r, ok := without.Row("corpus_v2", "baseline_json"); !ok || r.Quality == nil || r.Quality.MRR != 0 {
		t.Errorf("without --config: got %+v, want nothing ranked for a word no tool uses", r.Quality)
	}
	// The ablation's indexes get the config's groups too.
	if r := ablationRow(t, with, "production"); r.Quality == nil || r.Quality.MRR == 0 {
		t.Errorf("ablation production row with --config: got %+v, want the synonym applied", r.Quality)
	}
	for _, v := range []string{"+dense", "dense-only"} {
		if r := ablationRow(t, with, v); r.Status != bench.StatusUnavailable || !strings.Contains(r.UnavailableReason, "is off") {
			t.Errorf("%s with a config whose embeddings are off: got %q %q, want unavailable saying so", v, r.Status, r.UnavailableReason)
		}
	}
	if code, _, stderr := runBenchCLI(t, "run", "--config", filepath.Join(dir, "missing.json")); code != 2 || !strings.Contains(stderr, "--config") {
		t.Errorf("run --config missing.json: exit %d, stderr %q; want 2 naming --config", code, stderr)
	}
}

// runReport runs the profiler with args plus --out, fails the test unless it
// succeeds, and returns the report and its raw JSON.
func runReport(t *testing.T, args ...string) (bench.Report, []byte) {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := runBenchCLI(t, append(args, "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, raw
}
