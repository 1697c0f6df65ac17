package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/redact"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// runList connects to every configured server, prints what each offers
// under the names a client of mcproxy sees, and exits.
func runList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("list", `list [tools|prompts|resources] [flags]`, stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file")
	mode := fs.String("mode", "", `"retrieve" or "direct": whose tool names to print (default: the config's mode)`)
	logLevel := fs.String("log-level", "error", "log level for connection messages on stderr: debug, info, warn or error")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	kinds := []string{server.KindTools, server.KindPrompts, server.KindResources}
	switch {
	case len(pos) > 1:
		fmt.Fprintf(stderr, "mcproxy list: give at most one of tools, prompts or resources, got %q\n", pos)
		return exitUsage
	case len(pos) == 1:
		k := pos[0]
		if k != server.KindTools && k != server.KindPrompts && k != server.KindResources {
			fmt.Fprintf(stderr, "mcproxy list: %q is not something servers offer: want tools, prompts or resources\n", k)
			return exitUsage
		}
		kinds = []string{k}
	}
	cfg, st, done, ok := oneShotStack(ctx, *cfgPath, *logLevel, stderr, func(c *config.Config) {
		if *mode != "" {
			c.Mode = *mode
		}
	})
	if !ok {
		return exitError
	}
	defer done()
	statuses := st.status()
	for _, kind := range kinds {
		printExposed(stdout, kind, cfg.Mode, st.front.Exposed(kind))
	}
	printBroken(stdout, statuses, time.Now())
	for _, s := range statuses {
		if s.State == upstream.StateReady {
			return exitOK
		}
	}
	if len(statuses) > 0 {
		fmt.Fprintln(stderr, "mcproxy: no server is working; fix the servers above and run list again")
		return exitError
	}
	return exitOK
}

// printExposed writes one kind's names, grouped by server.
func printExposed(w io.Writer, kind, mode string, items []server.Exposed) {
	head := kind
	if kind == server.KindTools && mode != config.ModeDirect {
		head = "tools (ids for call_tool; retrieve mode lists only its meta tools)"
	}
	fmt.Fprintf(w, "%s: %d\n", head, len(items))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	last := ""
	for _, it := range items {
		if it.Server != last {
			fmt.Fprintf(tw, "  %s\n", it.Server)
			last = it.Server
		}
		name := it.Name
		if it.Template {
			name += "  (template)"
		}
		fmt.Fprintf(tw, "    %s\t%s\n", name, firstLine(it.Description, 80))
	}
	tw.Flush()
}

// oneShotStack loads the config (adjusted by adjust), wires a stack with an
// in-memory index (a one-shot command must not contend with a running
// mcproxy for the on-disk one) and connects every server. ok is false when
// something failed, already reported on stderr; otherwise done closes it all.
func oneShotStack(ctx context.Context, cfgPath, logLevel string, stderr io.Writer, adjust func(*config.Config)) (cfg *config.Config, st *stack, done func(), ok bool) {
	cfg, err := loadConfig(cfgPath, adjust)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return nil, nil, nil, false
	}
	log, closeLog, err := newLogger(logLevel, "", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return nil, nil, nil, false
	}
	log = redact.Logger(log, redactor(cfg, true))
	// An in-memory index: a one-shot command must not contend with a
	// running mcproxy for the on-disk one.
	// The remembered revisions are shared: the file is only ever
	// replaced whole.
	st, err = newStack(cfg, stackOptions{Version: versionString(), Logger: log, LearnFile: learnFile(cfg),
		Revisions: filepath.Join(config.ExpandHome(cfg.DataDir), upstream.RevisionsFile)})
	if err != nil {
		closeLog()
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return nil, nil, nil, false
	}
	done = func() {
		_ = st.close()
		closeLog()
	}
	stopProgress := progress(stderr, log, st.status, progressEvery)
	st.start(ctx)
	stopProgress()
	if ctx.Err() != nil {
		done()
		return nil, nil, nil, false
	}
	return cfg, st, done, true
}
