package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/activity"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

const sessionsUsage = `Usage:
  mcproxy sessions list                 [--config F]
  mcproxy sessions show ID              [--config F]
  mcproxy sessions archive ID BLOCK|REF [--config F]
  mcproxy sessions rebuild ID           [--config F]
  mcproxy sessions prune [--older-than D] [--dry-run] [--config F]

list     Every noa session under <data_dir>/sessions, most recent first, with
         its messages, blocks, tokens saved and size on disk, and the total.
show     One session: its files, whether state.json matches the transcript,
         and every block with its tier, span, tokens and archive path.
archive  Print the archived original of a block (e.g. b3) or of one message
         (e.g. m00042), verbatim, to stdout.
rebuild  Rebuild a session's state from its transcript alone, recreate any
         missing block archive from it, and rewrite state.json. Run it while
         no mcproxy is serving that session.
prune    Remove the sessions nothing has touched for --older-than (default:
         noa.retention, 30 days unless configured; "30d", "36h"), never one
         that a running mcproxy holds open. --dry-run lists what would go.
         A running mcproxy does this itself at start-up and daily.

Session ids are the directory names list prints: a client's Mcp-Session-Id
over HTTP, stdio-<start time>-<random> for a stdio run.
`

// sessionOptions is what the server runs a session host with for cfg: the
// sessions directory, noa's configuration and the configured tokenizer, so
// the CLI counts and replays exactly as the server did. The warnings are
// noa's about its configuration.
func sessionOptions(cfg *config.Config) (session.Options, []string, error) {
	counter, err := tokens.New(cfg.Tokenizer)
	if err != nil {
		return session.Options{}, nil, &config.FieldError{Path: "tokenizer", Message: err.Error()}
	}
	c := *cfg
	c.DataDir = config.ExpandHome(cfg.DataDir)
	opts, warnings := session.OptionsFrom(&c, counter.Count)
	return opts, warnings, nil
}

// newSessions makes the session manager for serve, nil when noa is off.
// noa's configuration warnings are logged; they never stop the proxy.
func newSessions(cfg *config.Config, log *zap.Logger) (*session.Manager, error) {
	if !cfg.Noa.IsEnabled() {
		log.Info("noa is off (noa.enabled is false): tool results pass through without ref tags, nudges or size cuts")
		return nil, nil
	}
	opts, warnings, err := sessionOptions(cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("noa configuration", zap.String("warning", w))
	}
	opts.Logger = log.Named("session")
	opts.RecallOnly = cfg.Noa.RecallOnly()
	opts.Redact = redactor(cfg, false).String
	// tokens.Counter is additive at line starts: a cut is counted once.
	opts.CountSplitsAtLines = true
	log.Info("noa is on", zap.String("sessions", opts.Dir), zap.Int("context_limit", cfg.Noa.ContextLimit),
		zap.Int("max_result_tokens", cfg.Noa.MaxResultTokens), zap.String("tokenizer", cfg.Tokenizer))
	return session.NewManager(opts), nil
}

func runSessions(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		w := stderr
		code := exitUsage
		if len(args) > 0 {
			w, code = stdout, exitOK
		}
		fmt.Fprint(w, sessionsUsage)
		return code
	}
	sub, rest := args[0], args[1:]
	want := map[string][]string{
		"list":    nil,
		"show":    {"ID"},
		"archive": {"ID", "BLOCK"},
		"rebuild": {"ID"},
		"prune":   nil,
	}
	names, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "mcproxy sessions: unknown subcommand %q\n\n%s", sub, sessionsUsage)
		return exitUsage
	}
	synopsis := strings.TrimSpace("sessions " + sub + " " + strings.Join(names, " ") + " [flags]")
	fs := newFlagSet("sessions "+sub, synopsis, stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir, tokenizer and noa settings)")
	var olderThan *string
	var dryRun *bool
	if sub == "prune" {
		olderThan = fs.String("older-than", "", `remove sessions untouched for this long ("30d", "36h"); default noa.retention`)
		dryRun = fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) != len(names) {
		if len(names) == 0 {
			fmt.Fprintf(stderr, "mcproxy sessions %s: takes no arguments, got %q\n", sub, pos)
		} else {
			fmt.Fprintf(stderr, "mcproxy sessions %s: want %s, got %d argument(s); `mcproxy sessions list` shows the session ids\n",
				sub, strings.Join(names, " "), len(pos))
		}
		return exitUsage
	}
	cfg, err := loadSessionsConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	opts, _, err := sessionOptions(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	if cfg.Store.Shared() {
		// The gateway's conversations are kept in the store; what is
		// read of one is a copy fetched into a temporary directory.
		st, err := openSharedStore(cfg, zap.NewNop())
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		defer st.Close()
		opts.Store = st.Sessions()
		tmp, err := os.MkdirTemp("", "mcproxy-sessions-")
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		defer os.RemoveAll(tmp)
		ss := &storedSessions{opts: opts, tmp: tmp, where: pgstore.Redact(cfg.Store.Postgres)}
		if err := ss.run(stdout, sub, pos, olderThan, dryRun); err != nil {
			fmt.Fprintf(stderr, "mcproxy sessions %s: %v\n", sub, err)
			return exitError
		}
		return exitOK
	}
	switch sub {
	case "list":
		err = listSessions(stdout, opts, sessionCallers(cfg))
	case "show":
		err = showSession(stdout, opts, pos[0])
	case "archive":
		var data []byte
		if data, err = session.ReadOriginal(opts, pos[0], pos[1]); err == nil {
			_, err = stdout.Write(data)
		}
	case "rebuild":
		err = rebuildSession(stdout, opts, pos[0])
	case "prune":
		err = pruneSessions(stdout, opts, *olderThan, *dryRun)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy sessions %s: %v\n", sub, err)
		return exitError
	}
	return exitOK
}

// sessionCaller is who made a session's calls, as the call history
// recorded its newest one: the client's name and the token's.
type sessionCaller struct{ client, token string }

// sessionCallers names each session's client and token from cfg's call
// history (none when it is off or unreadable: the columns show "-").
func sessionCallers(cfg *config.Config) map[string]sessionCaller {
	list, err := activity.Read(activityFile(cfg), activity.Filter{}, 0, activityOptions(cfg, nil))
	if err != nil {
		return nil
	}
	out := map[string]sessionCaller{}
	for _, e := range list { // newest first: the first seen is the latest
		if _, ok := out[e.Session]; !ok && e.Session != "" {
			out[e.Session] = sessionCaller{client: e.Client, token: e.Token}
		}
	}
	return out
}

// listSessions writes one line per session, most recent first, each with
// its client and token as callers knows them.
func listSessions(w io.Writer, opts session.Options, callers map[string]sessionCaller) error {
	list, err := session.List(opts)
	if err != nil {
		return err
	}
	return writeSessionList(w, list, opts.Dir, callers)
}

// writeSessionList writes list, the sessions in where.
// callers names sessions' clients and tokens (nil: none known).
func writeSessionList(w io.Writer, list []session.Summary, where string, callers map[string]sessionCaller) error {
	var err error
	if len(list) == 0 {
		_, err = fmt.Fprintf(w, "no sessions in %s\n", where)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLAST ACTIVE (UTC)\tMESSAGES\tBLOCKS\tTOKENS SAVED\tTRANSCRIPT\tSIZE\tCLIENT\tTOKEN")
	var total int64
	for _, s := range list {
		who := callers[s.ID]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d active / %d\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.LastActive.UTC().Format("2006-01-02 15:04:05"), s.Messages,
			s.ActiveBlocks, s.Blocks, noa.FormatTokens(s.TokensSaved), session.FormatBytes(s.TranscriptBytes), session.FormatBytes(s.Bytes),
			orDash(who.client), orDash(who.token))
		total += s.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%d session(s), %s in %s\n", len(list), session.FormatBytes(total), where)
	return err
}

// pruneSessions removes (or with dryRun lists) the sessions untouched for
// olderThan, the configured retention when it is empty.
func pruneSessions(w io.Writer, opts session.Options, olderThan string, dryRun bool) error {
	age := opts.Retention
	if olderThan != "" {
		d, err := config.ParseRetention(olderThan)
		if err != nil {
			return fmt.Errorf("--older-than: %w", err)
		}
		age = d
	}
	if age <= 0 {
		return fmt.Errorf("noa.retention is off, so nothing is old enough to prune; give --older-than (for example --older-than 30d)")
	}
	rep, err := session.Prune(opts, age, dryRun)
	if err != nil {
		return err
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, p := range rep.Removed {
		fmt.Fprintf(w, "%s %s (last touched %s UTC, %s)\n", verb, p.ID, p.LastTouched.UTC().Format("2006-01-02 15:04:05"), session.FormatBytes(p.Bytes))
	}
	for _, id := range rep.InUse {
		fmt.Fprintf(w, "kept %s: a running mcproxy holds it open\n", id)
	}
	fmt.Fprintf(w, "%s %d session(s), %s, untouched for %s or longer\n", verb, len(rep.Removed), session.FormatBytes(rep.Bytes), humanAge(age))
	return errors.Join(rep.Errors...)
}

// humanAge writes a retention period the way it is configured: "30 days",
// "36 hours", not time.Duration's "720h0m0s".
func humanAge(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return unit(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	}
	return d.String()
}

// stateText says how state.json relates to the transcript.
func stateText(s session.StateStatus) string {
	switch s.Check {
	case session.StateUnreadable:
		return "unreadable (" + s.Err.Error() + ")"
	case session.StateMissing:
		return "missing (the next open rebuilds it from the transcript)"
	case session.StateBehind:
		return fmt.Sprintf("behind (record %d of %d; brought forward on the next open)", s.Seq, s.TranscriptSeq)
	case session.StateAhead:
		return fmt.Sprintf("ahead of the transcript (record %d of %d)", s.Seq, s.TranscriptSeq)
	case session.StateDiffers:
		return "differs from the transcript: " + s.Diff
	default:
		return "current"
	}
}

// showSession writes a session's overview: its files, the state of
// state.json, and every block with its tier, span, token savings and
// archive path.
func showSession(w io.Writer, opts session.Options, id string) error {
	in, err := session.Inspect(opts, id)
	if err != nil {
		return err
	}
	st := in.State
	active, tiers := 0, map[noa.Tier]int{}
	compressed, summaries := 0, 0
	for _, b := range in.Blocks {
		if b.Active {
			active++
			tiers[b.Tier]++
			compressed += b.CoveredTokens
			summaries += b.SummaryTokens
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s\n", id)
	fmt.Fprintf(tw, "directory\t%s\n", in.Dir)
	torn := ""
	if in.TornTail {
		torn = " (last record cut short by a crash; dropped on the next open)"
	}
	fmt.Fprintf(tw, "transcript\t%d records, %s%s\n", in.Records, session.FormatBytes(in.TranscriptBytes), torn)
	fmt.Fprintf(tw, "state.json\t%s\n", stateText(in.StateFile))
	fmt.Fprintf(tw, "messages\t%d (%d tool calls), refs up to %s\n", in.Messages, in.ToolCalls, noa.IndexToRef(max(noa.HighestUsedIndex(st.MessageRefs), 1)))
	var tl []string
	for t := noa.Tier(1); t <= 3; t++ {
		if tiers[t] > 0 {
			tl = append(tl, fmt.Sprintf("T%d: %d", t, tiers[t]))
		}
	}
	tierList := ""
	if len(tl) > 0 {
		tierList = "; " + strings.Join(tl, ", ")
	}
	fmt.Fprintf(tw, "blocks\t%d active, %d absorbed into higher tiers%s\n", active, len(in.Blocks)-active, tierList)
	fmt.Fprintf(tw, "tokens\t%s of messages stand behind %s of summaries (%s saved); %d Compress call(s) applied\n",
		noa.FormatTokens(compressed), noa.FormatTokens(summaries), noa.FormatTokens(compressed-summaries), st.Stats.Compressions)
	if in.CutResults > 0 {
		fmt.Fprintf(tw, "cut results\t%d, originals under %s\n", in.CutResults, filepath.Join(in.ArchiveDir, session.ResultsDir))
	}
	if len(in.OrphanArchives) > 0 {
		fmt.Fprintf(tw, "orphan archives\t%s (from a Compress interrupted before it was recorded)\n", strings.Join(in.OrphanArchives, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(in.Blocks) == 0 {
		_, err := fmt.Fprintln(w, "\nno blocks yet")
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK\tTIER\tSPAN\tMSGS\tTOKENS\tSTATUS\tTOPIC\tARCHIVE")
	for _, b := range in.Blocks {
		status := "active"
		if !b.Active {
			status = "absorbed by " + b.AbsorbedBy
		}
		path := b.Archive
		if b.ArchiveMissing {
			path += " (MISSING)"
		}
		fmt.Fprintf(tw, "%s\tT%d\t%s–%s\t%d\t%s→%s\t%s\t%s\t%s\n", b.BlockID, b.Tier, b.StartRef, b.EndRef, len(b.EffectiveMessageIDs),
			noa.FormatTokens(b.CompressedTokens), noa.FormatTokens(b.SummaryTokens), status, b.Topic, path)
	}
	return tw.Flush()
}

// rebuildSession rebuilds a session's state.json from its transcript and
// reports what it found.
func rebuildSession(w io.Writer, opts session.Options, id string) error {
	rep, err := session.Rebuild(opts, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "session %s: rebuilt from %d transcript records\n", id, rep.Records)
	fmt.Fprintf(w, "  Compress calls replayed: %d, skipped (they had created nothing): %d\n", rep.Replayed, rep.Skipped)
	fmt.Fprintf(w, "  blocks: %d, message refs: %d\n", rep.Blocks, rep.Refs)
	fmt.Fprintf(w, "  state.json before: %s\n", stateText(rep.Before))
	fmt.Fprintf(w, "  state.json now: current (record %d)\n", rep.Seq)
	for _, r := range rep.Recreated {
		fmt.Fprintf(w, "  recreated missing archive %s from the transcript\n", r)
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if rep.TornTail {
		_, err = fmt.Fprintln(w, "  note: the transcript's last record was cut short by a crash; it is ignored and will be dropped on the next open")
	}
	return err
}
