package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gatewaybench "github.com/mcproxy/mcproxy/bench/gateway"
	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// benchGateway runs `mcproxy bench gateway` (package bench/gateway) with
// args and returns the exit code: 0 when the replay ran and met every
// acceptance criterion, 1 when it failed or missed one (the report is
// written either way), 2 on a usage error.
func benchGateway(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcproxy bench gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opts    gatewaybench.Options
		outDir  = fs.String("out", "", "write report.json, report.md, report.svg and charts/ to this directory (default: report.md on stdout)")
		quiet   = fs.Bool("quiet", false, "no progress lines on stderr")
		runs    = fs.String("runs", "", "replay only the runs whose id contains one of these, comma-separated (default: every run)")
		windows = fs.String("windows", "200000,100000,40000", "the windows each run is replayed at, in tokens, comma-separated")
	)
	fs.StringVar(&opts.Trajectories.Dir, "trajectories", "", "directory of *"+trajectory.Ext+" runs (default: $"+trajectory.DirEnv+", else the runs built in from "+trajectory.DefaultDir+")")
	fs.BoolVar(&opts.NoSession, "no-session", false, "leave out the long session (four runs in one conversation)")
	fs.IntVar(&opts.SessionWindow, "session-window", gatewaybench.SessionWindow, "the window the long session is replayed at")
	fs.StringVar(&opts.Model, "model", "claude-sonnet-4-5", "model the client asks for; its prices cost every request")
	fs.StringVar(&opts.Tokenizer, "tokenizer", "", "tokenizer for every count, the gateway's pacing included: cl100k_base (default) or o200k_base")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: mcproxy bench gateway [flags]\n\n"+
			"Replays real agent runs through the model-API gateway against a scripted model that obeys noa's nudges,\n"+
			"beside the alternatives (straight, clearing old tool results, compaction), and reports each one's cost\n"+
			"with prompt caching.\n\n")
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
	if *runs != "" {
		opts.Runs = strings.Split(*runs, ",")
	}
	for _, w := range strings.Split(*windows, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy bench gateway: --windows %q: want whole numbers of tokens, comma-separated\n", *windows)
			return exitUsage
		}
		opts.Windows = append(opts.Windows, n)
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
		fmt.Fprintf(stdout, "wrote %s, %s, %s and %s\n", filepath.Join(*outDir, "report.json"), filepath.Join(*outDir, "report.md"),
			filepath.Join(*outDir, "report.svg"), filepath.Join(*outDir, "charts"))
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
