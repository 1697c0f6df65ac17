package bench

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	gatewaybench "github.com/mcproxy/mcproxy/bench/gateway"
	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/arms/armsio"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/tokens"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// builtinQueries are our graded query sets, compiled in so the binary can
// score the frozen corpora from anywhere.
//
//go:embed queries/*.queries.json
var builtinQueries embed.FS

const usage = `usage: mcproxy bench [run] [flags]
       mcproxy bench capture --config FILE --out FILE
       mcproxy bench gateway [flags]

run (the default) measures every encoding arm on the frozen corpora: tokens
per tool and per listing, savings against baseline_json, retrieval quality of
the production index on graded query sets, and the cost of discovery through
retrieve_tools. capture connects to the upstreams of a config file and writes
their tools as a corpus that run --corpus can measure. gateway replays a long
agent conversation through the model-API gateway and reports the tokens it
saved.

Run 'mcproxy bench run -h', 'mcproxy bench capture -h' or 'mcproxy bench
gateway -h' for flags.
`

// Main runs `mcproxy bench` with args (without the "bench" word itself) and
// returns the process exit code: 0 on success, 2 on a usage error, 1 when the
// measurement failed.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = runCmd(ctx, args, stdout, stderr)
	case "capture":
		err = captureCmd(ctx, args, stdout, stderr)
	case "gateway":
		return gatewaybench.Main(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcproxy bench: unknown subcommand %q\n\n%s", cmd, usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcproxy bench %s: %v\n", cmd, err)
		return 2
	default:
		fmt.Fprintf(stderr, "mcproxy bench %s: %v\n", cmd, err)
		return 1
	}
}

// usageError marks a bad invocation (exit code 2).
type usageError struct{ error }

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcproxy bench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		datasets  = fs.String("datasets", "", "frozen dataset directory (default $MCPROXY_DATASETS, else the copy built into mcproxy from bench/datasets)")
		corpora   listFlag
		queries   listFlag
		armList   = fs.String("arms", "", "comma-separated arms to measure (default: every arm whose runtime is installed; baseline_json is always measured); known: "+strings.Join(allArms(), ", "))
		tokenizer = fs.String("tokenizer", config.DefaultTokenizer, "tokenizer: cl100k_base or o200k_base")
		outDir    = fs.String("out", "", "write report.json, report.md and report.svg to this directory (default: report.md on stdout)")
		fixtures  = fs.String("fixtures", "", "result fixture file for toon_results (default: the frozen fixtures when measuring the frozen corpora, none with --corpus; \"none\" skips)")
		noFront   = fs.Bool("no-discovery", false, "skip the discovery-cost measurement through the MCP front")
		quiet     = fs.Bool("quiet", false, "no progress lines on stderr")
		ablation  = fs.Bool("ablation", false, "add the retrieval ablation: each index lever changed alone, scored on both halves of each query set")
		cfgPath   = fs.String("config", "", "mcproxy config file whose retrieval settings apply: its \"synonyms\" join the built-in lexicon, and its \"embeddings\" provider measures the ablation's +dense and dense-only rows (vectors cached under its data_dir)")
		expansion = fs.String("expansion", "", "word-embeddings file for query expansion (default: the one `mcproxy embeddings build` writes under the default data_dir, when present; \"none\" turns expansion off)")
	)
	fs.Var(&corpora, "corpus", "corpus file to measure, as PATH or NAME=PATH (repeatable; replaces the frozen corpora)")
	fs.Var(&queries, "queries", "graded query file (repeatable); it scores the corpus whose version matches its corpus_version")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: mcproxy bench [run] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	tk, err := tokens.New(*tokenizer)
	if err != nil {
		return usageError{fmt.Errorf("--tokenizer: %w", err)}
	}
	reg := registry()
	var notes []string
	var names []string
	if *armList == "" {
		names, notes = availableArms(reg)
	} else if names, err = parseArms(*armList); err != nil {
		return usageError{err}
	}

	ds := OpenDatasets(*datasets, os.Getenv)
	var cs []*Corpus
	if len(corpora) == 0 {
		for _, f := range []struct{ name, file string }{{"corpus_v2", CorpusV2File}, {"livemcptool", LiveMCPToolFile}} {
			c, err := ds.Corpus(f.file, f.name)
			if err != nil {
				return fmt.Errorf("%w (--datasets or %s names the frozen dataset directory)", err, DatasetsEnv)
			}
			cs = append(cs, c)
		}
	} else {
		for _, spec := range corpora {
			name, path := "", spec
			if n, p, ok := strings.Cut(spec, "="); ok {
				name, path = n, p
			}
			c, err := LoadCorpus(path, name)
			if err != nil {
				return err
			}
			cs = append(cs, c)
		}
	}
	if err := uniqueCorpusNames(cs); err != nil {
		return usageError{err}
	}
	sets, err := attachQuerySets(cs, queries)
	if err != nil {
		return err
	}

	p := &Profile{
		Corpora:       cs,
		QuerySets:     sets,
		Arms:          names,
		Registry:      reg,
		Counter:       tk,
		TokenizerName: tk.Name(),
		Front:         ServerFront,
		Progress:      stderr,
	}
	if *quiet {
		p.Progress = nil
	}
	if *noFront {
		p.Front = nil
	}
	p.Ablation = *ablation
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return usageError{fmt.Errorf("--config: %w", err)}
		}
		// The config's own retrieval settings, as mcproxy would search.
		p.Index.Synonyms = cfg.Synonyms
	}
	p.Dense, p.DenseUnavailable = denseFrom(cfg, *cfgPath)
	if p.Index.Expander, p.ExpandUnavailable, err = loadExpansion(*expansion); err != nil {
		return err
	}
	switch {
	case *fixtures == "none":
	case *fixtures == "" && len(corpora) > 0:
		notes = append(notes, "toon_results: skipped, since --corpus replaced the frozen corpora (pass --fixtures FILE to measure a result fixture file)")
	case *fixtures == "":
		if p.Fixtures, err = ds.ResultFixtures(); err != nil {
			return fmt.Errorf("%w (--fixtures none skips toon_results)", err)
		}
	default:
		if p.Fixtures, err = armsio.LoadResultFixtures(*fixtures); err != nil {
			return fmt.Errorf("%w (--fixtures none skips toon_results)", err)
		}
	}
	rep, err := p.Run(ctx)
	if err != nil {
		return err
	}
	rep.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	rep.Notes = append(rep.Notes, notes...)
	if *outDir == "" {
		_, err := io.WriteString(stdout, rep.Markdown())
		return err
	}
	if err := WriteReport(*outDir, rep); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join([]string{
		filepath.Join(*outDir, "report.json"), filepath.Join(*outDir, "report.md"), filepath.Join(*outDir, "report.svg")}, ", "))
	return nil
}

// WriteReport writes report.json, report.md and report.svg into dir,
// creating it when needed.
func WriteReport(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{{"report.json", js}, {"report.md", []byte(rep.Markdown())}, {"report.svg", []byte(rep.SVG())}}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return nil
}

// allArms is every arm the profiler knows, in report order.
func allArms() []string {
	return []string{arms.BaselineName, arms.CompactName, arms.ToonListingName, arms.TronName, arms.TSCGName}
}

func parseArms(list string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range allArms() {
		known[n] = true
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !known[n] {
			return nil, fmt.Errorf("--arms: unknown arm %q (known: %s)", n, strings.Join(allArms(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// availableArms is the default arm list: every arm that resolves. An arm
// whose runtime is missing (tscg without its npm package) is left out, with
// one note for the report saying why and how to add it.
func availableArms(r *arms.Registry) (names, notes []string) {
	for _, n := range allArms() {
		if _, err := r.Resolve(n); err != nil {
			reason := strings.TrimSuffix(err.Error(), ": "+arms.ErrArmUnavailable.Error())
			notes = append(notes, fmt.Sprintf("%s: left out of the default arms: %s; then pass --arms with %s in the list", n, reason, n))
			continue
		}
		names = append(names, n)
	}
	return names, notes
}

// registry holds the in-process arms and the TSCG arm, whose Node runtime
// may be missing (it then resolves to ErrArmUnavailable with the reason).
func registry() *arms.Registry {
	r := arms.NewRegistry()
	for _, a := range []arms.Arm{arms.NewBaseline(), arms.NewCompact(), arms.NewToonListing(), arms.NewTron(), armsio.NewTSCG()} {
		if err := r.Register(a); err != nil {
			panic(err) // a duplicate built-in name is a bug in this list
		}
	}
	return r
}

func uniqueCorpusNames(cs []*Corpus) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Name] {
			return fmt.Errorf("two corpora are named %q: name them with --corpus NAME=PATH", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// attachQuerySets pairs query sets with corpora by corpus_version: first the
// built-in sets, then each --queries file, which replaces a built-in set for
// the same corpus. Every label must name a tool of its corpus.
func attachQuerySets(cs []*Corpus, files []string) (map[string]NamedQuerySet, error) {
	byVersion := map[string]*Corpus{}
	for _, c := range cs {
		if c.Version != "" {
			byVersion[c.Version] = c
		}
	}
	out := map[string]NamedQuerySet{}
	entries, err := builtinQueries.ReadDir("queries")
	if err != nil {
		return nil, fmt.Errorf("reading built-in query sets: %w", err)
	}
	for _, e := range entries {
		data, err := builtinQueries.ReadFile("queries/" + e.Name())
		if err != nil {
			return nil, err
		}
		qs, err := ParseQuerySet(data)
		if err != nil {
			return nil, fmt.Errorf("built-in query set %s: %w", e.Name(), err)
		}
		if c, ok := byVersion[qs.CorpusVersion]; ok {
			out[c.Name] = NamedQuerySet{Name: "bench/queries/" + e.Name(), Set: qs}
		}
	}
	for _, f := range files {
		qs, err := LoadQuerySet(f)
		if err != nil {
			return nil, err
		}
		c, ok := byVersion[qs.CorpusVersion]
		if !ok {
			var have []string
			for v := range byVersion {
				have = append(have, v)
			}
			sort.Strings(have)
			return nil, fmt.Errorf("query set %s grades corpus_version %q, but the loaded corpora are %s", f, qs.CorpusVersion, strings.Join(have, ", "))
		}
		out[c.Name] = NamedQuerySet{Name: filepath.Base(f), Set: qs}
	}
	for name, qs := range out {
		for _, c := range cs {
			if c.Name == name {
				if err := qs.Set.CheckTools(c.IDs()); err != nil {
					return nil, fmt.Errorf("query set %s against corpus %s: %w", qs.Name, name, err)
				}
			}
		}
	}
	return out, nil
}

func captureCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcproxy bench capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "mcproxy config file whose upstreams to capture (required)")
	out := fs.String("out", "", "corpus file to write (required)")
	version := fs.String("version", "", "version stamp of the corpus (default capture@<UTC date>)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: mcproxy bench capture --config FILE --out FILE\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *cfgPath == "" || *out == "" {
		return usageError{errors.New("--config and --out are both required")}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	m := upstream.New(cfg, upstream.Options{})
	defer m.Close()
	m.Start(ctx)
	var down []string
	for _, st := range m.Status() {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled {
			down = append(down, fmt.Sprintf("%s (%s: %s)", st.Server, st.State, st.LastError))
		}
	}
	if len(down) > 0 {
		// A partial corpus would silently skew every later measurement.
		return fmt.Errorf("not every upstream came up, nothing written: %s", strings.Join(down, "; "))
	}
	tools := m.Tools()
	if len(tools) == 0 {
		return errors.New("the upstreams expose no tools, nothing written")
	}
	stamp := time.Now().UTC()
	v := *version
	if v == "" {
		v = "capture@" + stamp.Format("2006-01-02")
	}
	data, err := WriteCorpus(v, map[string]string{
		"captured":  stamp.Format(time.RFC3339),
		"config":    filepath.Base(*cfgPath),
		"generator": "mcproxy bench capture",
	}, tools)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("writing corpus: %w", err)
	}
	fmt.Fprintf(stdout, "captured %d tools from %d servers into %s\n", len(tools), len(m.Status()), *out)
	return nil
}
