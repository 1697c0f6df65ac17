package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/bench"
	"github.com/mcproxy/mcproxy/internal/arms/armsio"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

const benchUsage = `usage: mcproxy bench [run] [flags]
       mcproxy bench capture --config FILE --out FILE
       mcproxy bench gateway [flags]
       mcproxy bench import [flags] FILE

run (the default) measures every encoding arm on the frozen corpora: tokens
per tool and per listing, savings against baseline_json, retrieval quality of
the production index on graded query sets, and the cost of discovery through
retrieve_tools. capture connects to the upstreams of a config file and writes
their tools as a corpus that run --corpus can measure. gateway replays real
agent runs through the model-API gateway and beside the alternatives, and
reports what each costs with prompt caching. import converts an agent run
(mini-swe-agent or OpenHands) into a run gateway replays.

Run 'mcproxy bench run -h', 'mcproxy bench capture -h', 'mcproxy bench
gateway -h' or 'mcproxy bench import -h' for flags.
`

// runBench runs `mcproxy bench` with args (without the "bench" word itself)
// and returns the process exit code: 0 on success, 2 on a usage error, 1
// when the measurement failed. The profiler is package bench; this is its
// flags, defaults and output files.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = benchRun(ctx, args, stdout, stderr)
	case "capture":
		err = benchCapture(ctx, args, stdout, stderr)
	case "gateway":
		return benchGateway(ctx, args, stdout, stderr)
	case "import":
		err = benchImport(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, benchUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "mcproxy bench: unknown subcommand %q\n\n%s", cmd, benchUsage)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcproxy bench %s: %v\n", cmd, err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "mcproxy bench %s: %v\n", cmd, err)
		return exitError
	}
}

// usageError marks a bad invocation (exit code 2).
type usageError struct{ error }

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// benchRun is `mcproxy bench run`: it reads the flags into a bench.Profile,
// runs it and writes the report.
func benchRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcproxy bench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		datasets  = fs.String("datasets", "", "frozen dataset directory (default $MCPROXY_DATASETS, else the copy built into mcproxy from bench/datasets)")
		corpora   listFlag
		queries   listFlag
		armList   = fs.String("arms", "", "comma-separated arms to measure (default: every arm whose runtime is installed; baseline_json is always measured); known: "+strings.Join(bench.AllArms(), ", "))
		tokenizer = fs.String("tokenizer", config.DefaultTokenizer, "tokenizer: cl100k_base or o200k_base")
		outDir    = fs.String("out", "", "write report.json, report.md and report.svg to this directory (default: report.md on stdout)")
		fixtures  = fs.String("fixtures", "", "result fixture file for toon_results (default: the frozen fixtures when measuring the frozen corpora, none with --corpus; \"none\" skips)")
		noFront   = fs.Bool("no-discovery", false, "skip the discovery-cost measurement through the MCP front")
		quiet     = fs.Bool("quiet", false, "no progress lines on stderr")
		ablation  = fs.Bool("ablation", false, "add the retrieval ablation: each index lever changed alone, scored on both halves of each query set")
		cfgPath   = fs.String("config", "", "mcproxy config file whose retrieval settings apply: its \"synonyms\" join the built-in lexicon, and its \"embeddings\" provider measures the ablation's +dense and dense-only rows (vectors cached under its data_dir)")
		learnFlag = fs.String("learn", "", "add the learning-from-use simulation: \"builtin\" for the built-in pair sets (bench/queries/*.pairs.json), or a pair file (query-set format with \"pair\" ids and first/later splits) for the corpus whose version it names")
		expansion = fs.String("expansion", "", "a `FILE` of word embeddings for query expansion (default: the one \"mcproxy embeddings build\" writes under the default data_dir, when present; \"none\" turns expansion off)")
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
	reg := bench.Registry()
	var notes []string
	var names []string
	if *armList == "" {
		names, notes = bench.AvailableArms(reg)
	} else if names, err = parseArms(*armList); err != nil {
		return usageError{err}
	}

	ds := bench.OpenDatasets(*datasets, os.Getenv)
	var cs []*bench.Corpus
	if len(corpora) == 0 {
		for _, f := range []struct{ name, file string }{{"corpus_v2", bench.CorpusV2File}, {"livemcptool", bench.LiveMCPToolFile}} {
			c, err := ds.Corpus(f.file, f.name)
			if err != nil {
				return fmt.Errorf("%w (--datasets or %s names the frozen dataset directory)", err, bench.DatasetsEnv)
			}
			cs = append(cs, c)
		}
	} else {
		for _, spec := range corpora {
			name, path := "", spec
			if n, p, ok := strings.Cut(spec, "="); ok {
				name, path = n, p
			}
			c, err := bench.LoadCorpus(path, name)
			if err != nil {
				return err
			}
			cs = append(cs, c)
		}
	}
	if err := bench.CheckCorpusNames(cs); err != nil {
		return usageError{err}
	}
	sets, err := bench.AttachQuerySets(cs, queries)
	if err != nil {
		return err
	}

	p := &bench.Profile{
		Corpora:       cs,
		QuerySets:     sets,
		Arms:          names,
		Registry:      reg,
		Counter:       tk,
		TokenizerName: tk.Name(),
		Front:         bench.ServerFront,
		Progress:      stderr,
	}
	if *quiet {
		p.Progress = nil
	}
	if *noFront {
		p.Front = nil
	}
	p.Ablation = *ablation
	switch *learnFlag {
	case "":
	case "builtin":
		if p.Learn, err = bench.BuiltinPairs(cs); err != nil {
			return err
		}
	default:
		pairs, err := bench.LoadQuerySet(*learnFlag)
		if err != nil {
			return usageError{fmt.Errorf("--learn: %w", err)}
		}
		p.Learn = map[string]*bench.QuerySet{}
		for _, c := range cs {
			if c.Version == pairs.CorpusVersion {
				if err := errors.Join(pairs.CheckTools(c.IDs()), pairs.CheckPairs()); err != nil {
					return usageError{fmt.Errorf("--learn: %w", err)}
				}
				p.Learn[c.Name] = pairs
			}
		}
		if len(p.Learn) == 0 {
			return usageError{fmt.Errorf("--learn: %s grades corpus %q, which this run does not measure", *learnFlag, pairs.CorpusVersion)}
		}
	}
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = config.Load(*cfgPath); err != nil {
			return usageError{fmt.Errorf("--config: %w", err)}
		}
		// The config's own retrieval settings, as mcproxy would search.
		p.Index.Synonyms = cfg.Synonyms
	}
	p.Dense, p.DenseUnavailable = bench.DenseFrom(cfg, *cfgPath)
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
	if err := bench.WriteReport(*outDir, rep); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join([]string{
		filepath.Join(*outDir, "report.json"), filepath.Join(*outDir, "report.md"), filepath.Join(*outDir, "report.svg")}, ", "))
	return nil
}

func parseArms(list string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range bench.AllArms() {
		known[n] = true
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !known[n] {
			return nil, fmt.Errorf("--arms: unknown arm %q (known: %s)", n, strings.Join(bench.AllArms(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// benchCapture is `mcproxy bench capture`: bench.Capture, written as a
// corpus file.
func benchCapture(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	tools, servers, err := bench.Capture(ctx, cfg)
	if err != nil {
		return err
	}
	stamp := time.Now().UTC()
	v := *version
	if v == "" {
		v = "capture@" + stamp.Format("2006-01-02")
	}
	data, err := bench.WriteCorpus(v, map[string]string{
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
	fmt.Fprintf(stdout, "captured %d tools from %d servers into %s\n", len(tools), servers, *out)
	return nil
}
