package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The functions below back `mcproxy sessions list|show|archive|rebuild`.
// They take the options a server would run with (Dir, Noa, Count) and write
// human-readable text to w. All but Rebuild only read, and take no lock;
// Rebuild writes, under the session's lock (see LockFile).

// inspected is a session read from disk without changing it.
type inspected struct {
	dir       string
	tr        transcript
	saved     savedState
	haveState bool
	stateErr  error
	rp        replay
	arch      *Archiver
	trBytes   int64
}

// sessionDir is the directory of the existing session id.
func sessionDir(opts Options, id string) (string, error) {
	if !ValidSessionID(id) {
		return "", fmt.Errorf("invalid session id %q", id)
	}
	dir := filepath.Join(opts.Dir, id)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("no session %q in %s", id, opts.Dir)
	}
	return dir, nil
}

func inspect(opts Options, id string) (*inspected, error) {
	opts = opts.withDefaults()
	dir, err := sessionDir(opts, id)
	if err != nil {
		return nil, err
	}
	in := &inspected{dir: dir, arch: &Archiver{Root: filepath.Join(dir, ArchiveDir), FS: opts.FS}}
	if in.tr, err = readTranscript(filepath.Join(dir, TranscriptFile)); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(dir, TranscriptFile)); err == nil {
		in.trBytes = fi.Size()
	}
	in.saved, in.haveState, in.stateErr = readState(filepath.Join(dir, StateFile))
	in.rp = replayTranscript(in.tr.records, -1, id, in.arch, opts.Noa, newMemo(opts.Count).count, false)
	if len(in.tr.records) == 0 {
		in.rp.state = noa.CreateInitialState(id, in.arch.Root)
	}
	return in, nil
}

// stateStatus says how state.json relates to the transcript.
func (in *inspected) stateStatus() string {
	switch {
	case in.stateErr != nil:
		return "unreadable (" + in.stateErr.Error() + ")"
	case !in.haveState:
		return "missing (the next open rebuilds it from the transcript)"
	case in.saved.Seq < in.rp.seq:
		return fmt.Sprintf("behind (record %d of %d; brought forward on the next open)", in.saved.Seq, in.rp.seq)
	case in.saved.Seq > in.rp.seq:
		return fmt.Sprintf("ahead of the transcript (record %d of %d)", in.saved.Seq, in.rp.seq)
	case !sameState(in.saved.State, in.rp.state):
		return "differs from the transcript: " + stateDiff(in.saved.State, in.rp.state)
	default:
		return "current"
	}
}

// List writes one line per session under opts.Dir, most recent first.
func List(w io.Writer, opts Options) error {
	opts = opts.withDefaults()
	entries, err := os.ReadDir(opts.Dir)
	if notExist(err) {
		_, err = fmt.Fprintf(w, "no sessions in %s\n", opts.Dir)
		return err
	}
	if err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	type row struct {
		id                  string
		mod                 time.Time
		msgs, active, total int
		saved               int
		size                int64
	}
	var rows []row
	for _, e := range entries {
		if !e.IsDir() || !ValidSessionID(e.Name()) {
			continue
		}
		dir := filepath.Join(opts.Dir, e.Name())
		fi, err := os.Stat(filepath.Join(dir, TranscriptFile))
		if err != nil {
			continue
		}
		r := row{id: e.Name(), mod: fi.ModTime(), size: fi.Size()}
		if s, ok, err := readState(filepath.Join(dir, StateFile)); err == nil && ok {
			r.msgs = len(s.State.MessageRefs.ByRaw)
			r.total = len(s.State.Blocks)
			for _, b := range s.State.Blocks {
				if b.Active {
					r.active++
					r.saved += coveredTokens(b, s.State) - summaryTokens(b, opts.Count)
				}
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		_, err = fmt.Fprintf(w, "no sessions in %s\n", opts.Dir)
		return err
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].mod.Equal(rows[j].mod) {
			return rows[i].mod.After(rows[j].mod)
		}
		return rows[i].id < rows[j].id
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLAST ACTIVE (UTC)\tMESSAGES\tBLOCKS\tTOKENS SAVED\tTRANSCRIPT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d active / %d\t%s\t%s\n", r.id, r.mod.UTC().Format("2006-01-02 15:04:05"), r.msgs, r.active, r.total, noa.FormatTokens(r.saved), byteSize(int(r.size)))
	}
	return tw.Flush()
}

// coveredTokens is what the messages a block stands in for cost when they
// were first seen (their frozen token snapshots): for a tier-2 or tier-3
// block that is the raw conversation, not the summaries it absorbed.
func coveredTokens(b noa.CompressionBlock, st noa.CompressionState) int {
	n := 0
	for _, id := range b.EffectiveMessageIDs {
		if ref, ok := noa.RefForRaw(st.MessageRefs, id); ok {
			n += st.TokenSnapshot[ref]
		}
	}
	return n
}

func summaryTokens(b noa.CompressionBlock, count noa.TokenCountFn) int {
	if count == nil {
		count = noa.DefaultCountTokens
	}
	return count(noa.RenderSummaryMessage(b).Text)
}

// Show writes a session's overview: its files, the state of state.json, and
// every block with its tier, span, token savings and archive path.
func Show(w io.Writer, opts Options, id string) error {
	opts = opts.withDefaults()
	in, err := inspect(opts, id)
	if err != nil {
		return err
	}
	st := in.rp.state
	active, tiers := 0, map[noa.Tier]int{}
	compressed, summaries := 0, 0
	for _, b := range st.Blocks {
		if b.Active {
			active++
			tiers[b.Tier]++
			compressed += coveredTokens(b, st)
			summaries += summaryTokens(b, opts.Count)
		}
	}
	calls := 0
	for _, m := range in.rp.msgs {
		if m.ContentType == noa.CTToolCall {
			calls++
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s\n", id)
	fmt.Fprintf(tw, "directory\t%s\n", in.dir)
	fmt.Fprintf(tw, "transcript\t%d records, %s%s\n", len(in.tr.records), byteSize(int(in.trBytes)), map[bool]string{true: " (last record cut short by a crash; dropped on the next open)"}[in.tr.torn])
	fmt.Fprintf(tw, "state.json\t%s\n", in.stateStatus())
	fmt.Fprintf(tw, "messages\t%d (%d tool calls), refs up to %s\n", len(in.rp.msgs), calls, noa.IndexToRef(max(noa.HighestUsedIndex(st.MessageRefs), 1)))
	var tl []string
	for t := noa.Tier(1); t <= 3; t++ {
		if tiers[t] > 0 {
			tl = append(tl, fmt.Sprintf("T%d: %d", t, tiers[t]))
		}
	}
	fmt.Fprintf(tw, "blocks\t%d active, %d absorbed into higher tiers%s\n", active, len(st.Blocks)-active, joinNonEmpty("; ", strings.Join(tl, ", ")))
	fmt.Fprintf(tw, "tokens\t%s of messages stand behind %s of summaries (%s saved); %d Compress call(s) applied\n",
		noa.FormatTokens(compressed), noa.FormatTokens(summaries), noa.FormatTokens(compressed-summaries), st.Stats.Compressions)
	if len(in.rp.originals) > 0 {
		fmt.Fprintf(tw, "cut results\t%d, originals under %s\n", len(in.rp.originals), filepath.Join(in.arch.Root, ResultsDir))
	}
	if o := orphanArchives(in.arch.Root, st); len(o) > 0 {
		fmt.Fprintf(tw, "orphan archives\t%s (from a Compress interrupted before it was recorded)\n", strings.Join(o, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Blocks) == 0 {
		_, err := fmt.Fprintln(w, "\nno blocks yet")
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK\tTIER\tSPAN\tMSGS\tTOKENS\tSTATUS\tTOPIC\tARCHIVE")
	absorbedBy := map[string]string{}
	for _, b := range st.Blocks {
		for _, c := range b.DirectBlockIDs {
			absorbedBy[c] = b.BlockID
		}
	}
	for _, b := range st.Blocks {
		status := "active"
		if !b.Active {
			status = "absorbed by " + absorbedBy[b.BlockID]
		}
		path := filepath.Join(in.arch.Root, filepath.FromSlash(b.ArchiveRel))
		if _, err := os.Stat(path); err != nil {
			path += " (MISSING)"
		}
		fmt.Fprintf(tw, "%s\tT%d\t%s–%s\t%d\t%s→%s\t%s\t%s\t%s\n", b.BlockID, b.Tier, b.StartRef, b.EndRef, len(b.EffectiveMessageIDs),
			noa.FormatTokens(b.CompressedTokens), noa.FormatTokens(summaryTokens(b, opts.Count)), status, b.Topic, path)
	}
	return tw.Flush()
}

func joinNonEmpty(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// Archive writes the archive of one block (an id such as "b3"), or the
// original of one message (a ref such as "m00042"), verbatim to w.
func Archive(w io.Writer, opts Options, id, name string) error {
	opts = opts.withDefaults()
	in, err := inspect(opts, id)
	if err != nil {
		return err
	}
	st := in.rp.state
	if b := noa.FindBlock(&st, name); b != nil {
		data, err := os.ReadFile(filepath.Join(in.arch.Root, filepath.FromSlash(b.ArchiveRel)))
		if err != nil {
			return fmt.Errorf("reading the archive of %s: %w", b.BlockID, err)
		}
		_, err = w.Write(data)
		return err
	}
	if raw, ok := noa.RawForRef(st.MessageRefs, name); ok {
		if rel, cut := in.rp.originals[raw]; cut {
			data, err := os.ReadFile(filepath.Join(in.arch.Root, filepath.FromSlash(rel)))
			if err != nil {
				return fmt.Errorf("reading the original of %s: %w", name, err)
			}
			_, err = w.Write(data)
			return err
		}
		for _, m := range in.rp.msgs {
			if m.ID == raw {
				_, err := io.WriteString(w, m.Text)
				return err
			}
		}
	}
	var ids []string
	for _, b := range st.Blocks {
		ids = append(ids, b.BlockID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("session %s has no block %q (it has no blocks yet)", id, name)
	}
	return fmt.Errorf("session %s has no block or message %q; its blocks are %s", id, name, strings.Join(ids, ", "))
}

// Rebuild rebuilds a session's state from its transcript alone, recreating
// any missing block archive from the recorded originals, writes it to
// state.json (atomically), and reports what it found. It holds the
// session's lock throughout, so it fails with an *InUseError while a proxy
// (or another rebuild) has the session open.
func Rebuild(w io.Writer, opts Options, id string) (err error) {
	opts = opts.withDefaults()
	dir, err := sessionDir(opts, id)
	if err != nil {
		return err
	}
	lock, err := lockSession(dir, id)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lock.release(); err == nil {
			err = rerr
		}
	}()
	in, err := inspect(opts, id)
	if err != nil {
		return err
	}
	if len(in.tr.records) == 0 {
		return errors.New("the transcript is empty; there is nothing to rebuild")
	}
	before := in.stateStatus()
	rp := replayTranscript(in.tr.records, -1, id, in.arch, opts.Noa, newMemo(opts.Count).count, true)
	b, err := encodeState(rp.seq, rp.state)
	if err != nil {
		return err
	}
	if _, err := writeAtomic(opts.FS, filepath.Join(in.dir, StateFile), b); err != nil {
		return fmt.Errorf("writing state.json: %w", err)
	}
	fmt.Fprintf(w, "session %s: rebuilt from %d transcript records\n", id, len(in.tr.records))
	fmt.Fprintf(w, "  Compress calls replayed: %d, skipped (they had created nothing): %d\n", rp.result.Replayed, rp.result.Skipped)
	fmt.Fprintf(w, "  blocks: %d, message refs: %d\n", len(rp.state.Blocks), len(rp.state.MessageRefs.ByRef))
	fmt.Fprintf(w, "  state.json before: %s\n", before)
	fmt.Fprintf(w, "  state.json now: current (record %d)\n", rp.seq)
	for _, r := range rp.recreated {
		fmt.Fprintf(w, "  recreated missing archive %s from the transcript\n", r)
	}
	for _, warn := range rp.result.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if in.tr.torn {
		fmt.Fprintln(w, "  note: the transcript's last record was cut short by a crash; it is ignored and will be dropped on the next open")
	}
	return nil
}
