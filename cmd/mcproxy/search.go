package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("search", `search "QUERY" [flags]`, stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file")
	limit := fs.Int("limit", 0, "how many matches to print (default: the config's retrieve_limit)")
	explain := fs.Bool("explain", false, "say which matches were found through words learned from use")
	logLevel := fs.String("log-level", "error", "log level for connection messages on stderr: debug, info, warn or error")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	query := strings.TrimSpace(strings.Join(pos, " "))
	if query == "" {
		fmt.Fprintln(stderr, `mcproxy search: give a query, e.g. mcproxy search "read a file" --config ~/.mcproxy/config.json`)
		return exitUsage
	}
	if *limit < 0 || *limit > 50 {
		fmt.Fprintf(stderr, "mcproxy search: --limit must be 1 to 50, got %d\n", *limit)
		return exitUsage
	}

	cfg, st, done, ok := oneShotStack(ctx, *cfgPath, *logLevel, stderr, func(c *config.Config) {
		// search ranks tools; it never exposes them directly.
		c.Mode = config.ModeRetrieve
	})
	if !ok {
		return exitError
	}
	defer done()

	// Tool vectors are embedded in the background; a one-shot search waits
	// for them, or it would rank by BM25 alone without saying so.
	var syncErr error
	if st.dense != nil {
		sctx, cancel := context.WithTimeout(ctx, denseWait)
		syncErr = st.dense.Sync(sctx)
		cancel()
	}

	statuses := st.status()
	ready, tools := 0, 0
	for _, s := range statuses {
		if s.State == upstream.StateReady {
			ready++
			tools += s.Tools
		}
	}
	matches, err := st.front.Retrieve(ctx, query, *limit)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	printMatches(stdout, query, matches, tools, ready, *explain)
	if st.dense != nil {
		fmt.Fprintln(stdout, denseStatus(cfg.Embeddings, syncErr, st.dense.Stats()))
	}
	if broken := printBroken(stdout, statuses, time.Now()); broken > 0 {
		// A config check that passes with servers down would mislead.
		if ready == 0 {
			fmt.Fprintln(stderr, "mcproxy: no server is working; fix the servers above and run search again")
		} else {
			fmt.Fprintf(stderr, "mcproxy: %d server(s) not working (listed above); their tools are missing from the matches\n", broken)
		}
		return exitError
	}
	return exitOK
}

// progressEvery is how often search reports the servers it still waits for.
const progressEvery = 2 * time.Second

// printMatches writes the ranked matches, one block per tool:
//
//  1. 12.41  filesystem:read_text_file(path: string, head?: number)
//     Read the complete contents of a file from the file system as text.
//
// With explain, a match found through words it learned from use says which.
func printMatches(w io.Writer, query string, matches []server.Match, tools, servers int, explain bool) {
	fmt.Fprintf(w, "%d match(es) for %q among %d tools on %d server(s):\n", len(matches), query, tools, servers)
	if len(matches) == 0 {
		fmt.Fprintln(w, "  (none: try other words, e.g. the object the tool acts on)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, m := range matches {
		fmt.Fprintf(tw, "%2d.\t%.2f\t%s(%s)\n", i+1, m.Score, m.Tool.ID, server.Signature(m.Tool.Schema))
		if d := firstLine(m.Tool.Description, 100); d != "" {
			fmt.Fprintf(tw, "\t\t%s\n", d)
		}
		if explain && len(m.Learned) > 0 {
			fmt.Fprintf(tw, "\t\tlearned from use: %s (mcproxy learned list %s)\n", strings.Join(m.Learned, ", "), m.Tool.ID)
		}
	}
	tw.Flush()
}

// denseWait bounds how long search waits for the tools' vectors.
const denseWait = time.Minute

// denseStatus says whether the ranking above used dense retrieval: the
// provider may have failed while embedding the tools (syncErr) or the query
// (st.Down).
func denseStatus(e config.EmbeddingsConfig, syncErr error, st embed.Stats) string {
	which := fmt.Sprintf("\nDense retrieval (%s at %s): ", e.Model, e.URL)
	switch {
	case syncErr != nil:
		return which + fmt.Sprintf("unavailable (%v); ranked by BM25 alone.", syncErr)
	case st.Down:
		return which + "the provider failed on the query; ranked by BM25 alone."
	}
	return which + fmt.Sprintf("%d of %d tools embedded, fused with BM25.", st.Embedded, st.Tools)
}

// printBroken writes one line per server that is not working and returns
// how many there are.
func printBroken(w io.Writer, statuses []upstream.Status, now time.Time) int {
	n := 0
	for _, s := range statuses {
		if s.State == upstream.StateReady || s.State == upstream.StateDisabled {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nServers not working (their tools are missing above):")
		}
		n++
		line := fmt.Sprintf("  %s (%s): %s", s.Server, s.Transport, s.State)
		if s.Transport == "" { // misconfigured: how to reach it is in doubt
			line = fmt.Sprintf("  %s: %s", s.Server, s.State)
		}
		if s.LastError != "" {
			line += ": " + oneLine(s.LastError)
		}
		if !s.RetryAt.IsZero() {
			// A retry falls due while search waits for slower servers;
			// "in -2s" said nothing.
			if d := s.RetryAt.Sub(now); d > 0 {
				line += fmt.Sprintf(" (mcproxy serve would retry in %s)", max(d.Round(time.Second), time.Second))
			} else {
				line += " (mcproxy serve would retry now)"
			}
		}
		fmt.Fprintln(w, line)
	}
	return n
}

// firstLine is s's first line, cut to max runes.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if r := []rune(s); len(r) > max {
		return strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}
