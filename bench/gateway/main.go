package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Main runs `mcproxy bench gateway` with args and returns the exit code: 0
// when the replay ran and met every acceptance criterion, 1 when it failed
// or missed one (the report is written either way), 2 on a usage error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcproxy bench gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := DefaultScenario
	var (
		opts   Options
		outDir = fs.String("out", "", "write report.json, report.md and report.svg to this directory (default: report.md on stdout)")
		quiet  = fs.Bool("quiet", false, "no progress lines on stderr")
	)
	fs.IntVar(&opts.Scenario.Tasks, "tasks", d.Tasks, "reading steps")
	fs.IntVar(&opts.Scenario.FilesPerTask, "files-per-task", d.FilesPerTask, "files each reading step asks for (one read_file call each)")
	fs.IntVar(&opts.Scenario.MinFileBytes, "min-file-bytes", d.MinFileBytes, "smallest file")
	fs.IntVar(&opts.Scenario.MaxFileBytes, "max-file-bytes", d.MaxFileBytes, "largest file")
	fs.IntVar(&opts.Scenario.Facts, "facts", d.Facts, "facts planted in the first files read")
	fs.IntVar(&opts.Scenario.Questions, "questions", 0, "later questions about them (0: each fact once)")
	fs.Uint64Var(&opts.Scenario.Seed, "seed", d.Seed, "seed of the scenario's texts")
	fs.StringVar(&opts.Model, "model", "claude-sonnet-4-5", "model the client asks for")
	fs.IntVar(&opts.Window, "window", 0, "the model's input window in tokens (default: the gateway's built-in window for --model)")
	fs.StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer for every count, the gateway's pacing included: cl100k_base (default) or o200k_base")
	fs.BoolVar(&opts.NoCacheControl, "no-cache-control", false, "the client sets no prompt-cache breakpoints (by default it sets them as Claude Code does)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: mcproxy bench gateway [flags]\n\n"+
			"Replays a long, tool-heavy agent conversation through the model-API gateway against a scripted model\n"+
			"that obeys noa's nudges, and reports input tokens with and without the gateway.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcproxy bench gateway: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if opts.Scenario.Questions == 0 {
		opts.Scenario.Questions = opts.Scenario.Facts
	}
	if !*quiet {
		opts.Progress = stderr
	}
	rep, err := Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy bench gateway: %v\n", err)
		return 1
	}
	rep.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	if err := write(rep, *outDir, stdout); err != nil {
		fmt.Fprintf(stderr, "mcproxy bench gateway: %v\n", err)
		return 1
	}
	if !rep.Pass() {
		fmt.Fprintln(stderr, "mcproxy bench gateway: an acceptance criterion was missed (see the report)")
		return 1
	}
	return 0
}

// write puts the report in dir, or its markdown on stdout when dir is "".
func write(rep *Report, dir string, stdout io.Writer) error {
	if dir == "" {
		_, err := io.WriteString(stdout, rep.Markdown())
		return err
	}
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the report directory: %w", err)
	}
	for name, body := range map[string][]byte{"report.json": js, "report.md": []byte(rep.Markdown()), "report.svg": []byte(rep.SVG())} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s, %s and %s\n", filepath.Join(dir, "report.json"), filepath.Join(dir, "report.md"), filepath.Join(dir, "report.svg"))
	return nil
}
