package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	gatewaybench "github.com/mcproxy/mcproxy/bench/gateway"
)

// benchGateway runs `mcproxy bench gateway` (package bench/gateway) with
// args and returns the exit code: 0 when the replay ran and met every
// acceptance criterion, 1 when it failed or missed one (the report is
// written either way), 2 on a usage error.
func benchGateway(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcproxy bench gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := gatewaybench.DefaultScenario
	var (
		opts   gatewaybench.Options
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
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcproxy bench gateway: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if opts.Scenario.Questions == 0 {
		opts.Scenario.Questions = opts.Scenario.Facts
	}
	if !*quiet {
		opts.Progress = stderr
	}
	rep, err := gatewaybench.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy bench gateway: %v\n", err)
		return exitError
	}
	rep.GeneratedAt = time.Now().UTC().Format(time.RFC3339)
	if *outDir == "" {
		_, err = io.WriteString(stdout, rep.Markdown())
	} else if err = gatewaybench.WriteReport(*outDir, rep); err == nil {
		fmt.Fprintf(stdout, "wrote %s, %s and %s\n", filepath.Join(*outDir, "report.json"), filepath.Join(*outDir, "report.md"), filepath.Join(*outDir, "report.svg"))
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy bench gateway: %v\n", err)
		return exitError
	}
	if !rep.Pass() {
		fmt.Fprintln(stderr, "mcproxy bench gateway: an acceptance criterion was missed (see the report)")
		return exitError
	}
	return exitOK
}
