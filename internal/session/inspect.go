package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The functions below read sessions from disk for `mcproxy sessions` (which
// formats what they return). They take the options a server would run with
// (Dir, Noa, Count). All but Rebuild only read, and take no lock; Rebuild
// writes, under the session's lock (see LockFile).

// Summary is one session as a listing shows it.
type Summary struct {
	ID string
	// LastActive is when the transcript was last written.
	LastActive time.Time
	// Messages counts the messages state.json gives refs to; Blocks and
	// ActiveBlocks its blocks (all, and those not absorbed into a higher
	// tier); TokensSaved what the active blocks save (see
	// BlockInfo.CoveredTokens). All zero when state.json is unreadable.
	Messages, Blocks, ActiveBlocks, TokensSaved int
	// TranscriptBytes is the transcript's size, Bytes the whole session
	// directory's (transcript, state, archives).
	TranscriptBytes, Bytes int64
}

// List returns every session under opts.Dir, most recent first; none (and
// no error) when the directory does not exist.
func List(opts Options) ([]Summary, error) {
	opts = opts.withDefaults()
	entries, err := os.ReadDir(opts.Dir)
	if notExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var out []Summary
	for _, e := range entries {
		if !e.IsDir() || !ValidSessionID(e.Name()) {
			continue
		}
		dir := filepath.Join(opts.Dir, e.Name())
		fi, err := os.Stat(filepath.Join(dir, TranscriptFile))
		if err != nil {
			continue
		}
		s := Summary{ID: e.Name(), LastActive: fi.ModTime(), TranscriptBytes: fi.Size()}
		s.Bytes, _ = dirSize(dir) // a file removed meanwhile only makes it smaller
		saved, ok, err := readState(filepath.Join(dir, StateFile))
		if err == nil && !ok {
			// No state.json yet: a session in use writes it at a turn,
			// checkpointed; until then its transcript counts (issue 30).
			if tr, err := readTranscript(filepath.Join(dir, TranscriptFile)); err == nil {
				s.Messages = tr.messages()
			}
		}
		if err == nil && ok {
			st := saved.State
			s.Messages, s.Blocks = len(st.MessageRefs.ByRaw), len(st.Blocks)
			for _, b := range st.Blocks {
				if b.Active {
					s.ActiveBlocks++
					s.TokensSaved += coveredTokens(b, st) - summaryTokens(b, opts.Count)
				}
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastActive.Equal(out[j].LastActive) {
			return out[i].LastActive.After(out[j].LastActive)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// StateCheck is how state.json relates to the transcript.
type StateCheck int

// State checks.
const (
	// StateCurrent: state.json is what the transcript rebuilds.
	StateCurrent StateCheck = iota
	// StateMissing: there is no state.json; the next open rebuilds it.
	StateMissing
	// StateUnreadable: state.json cannot be read or decoded (see
	// StateStatus.Err).
	StateUnreadable
	// StateBehind: state.json reflects an earlier record; the next open
	// brings it forward.
	StateBehind
	// StateAhead: state.json reflects a record the transcript does not
	// hold.
	StateAhead
	// StateDiffers: state.json and the transcript disagree (see
	// StateStatus.Diff).
	StateDiffers
)

// StateStatus is what reading state.json against the transcript found.
type StateStatus struct {
	Check StateCheck
	// Seq is the record state.json reflects, TranscriptSeq the
	// transcript's last.
	Seq, TranscriptSeq int64
	// Err is why state.json is unreadable; Diff names what differs.
	Err  error
	Diff string
}

// Inspection is one session read from disk without changing it.
type Inspection struct {
	ID, Dir string
	// ArchiveDir is the session's archive directory; cut results'
	// originals are under its ResultsDir.
	ArchiveDir string
	// Records is how many complete records the transcript holds and
	// TranscriptBytes its size; TornTail is set when a record cut short by
	// a crash follows them (the next open drops it).
	Records         int
	TranscriptBytes int64
	TornTail        bool
	StateFile       StateStatus
	// State is the noa state the transcript rebuilds.
	State noa.CompressionState
	// Messages and ToolCalls count the recorded messages and the tool
	// calls among them.
	Messages, ToolCalls int
	// Blocks are the state's blocks, in its order.
	Blocks []BlockInfo
	// CutResults counts messages recorded cut to size.
	CutResults int
	// OrphanArchives are block archives no block points at (from a
	// Compress interrupted before it was recorded).
	OrphanArchives []string
}

// BlockInfo is one block and what it stands for.
type BlockInfo struct {
	noa.CompressionBlock
	// CoveredTokens is what the messages the block stands in for cost when
	// they were first seen (their frozen token counts): for a tier-2 or
	// tier-3 block the raw conversation, not the summaries it absorbed.
	// SummaryTokens is what its summary costs.
	CoveredTokens, SummaryTokens int
	// Archive is the archive's path; ArchiveMissing is set when it is not
	// on disk.
	Archive        string
	ArchiveMissing bool
	// AbsorbedBy is the block that absorbed an inactive one.
	AbsorbedBy string
}

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
	// cfg is the configuration the transcript is replayed with, count the
	// tokenizer it is counted with (sessionTokenizer).
	cfg   noa.Config
	count noa.TokenCountFn
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
	if opts, err = sessionTokenizer(opts, dir, false); err != nil {
		return nil, err
	}
	in := &inspected{dir: dir, arch: &Archiver{Root: filepath.Join(dir, ArchiveDir), FS: opts.FS}, count: opts.Count}
	if in.tr, err = readTranscript(filepath.Join(dir, TranscriptFile)); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(dir, TranscriptFile)); err == nil {
		in.trBytes = fi.Size()
	}
	in.saved, in.haveState, in.stateErr = readState(filepath.Join(dir, StateFile))
	cfg := opts.Noa
	if saved, err := readHostConfig(dir); err != nil {
		return nil, err
	} else if saved != nil {
		cfg = *saved
	}
	in.cfg = cfg
	in.rp = replayTranscript(in.tr.records, -1, id, in.arch, cfg, newMemo(in.count).count, false)
	if len(in.tr.records) == 0 {
		in.rp.state = noa.CreateInitialState(id, in.arch.Root)
	}
	return in, nil
}

// stateStatus says how state.json relates to the transcript.
func (in *inspected) stateStatus() StateStatus {
	s := StateStatus{Seq: in.saved.Seq, TranscriptSeq: in.rp.seq, Err: in.stateErr}
	switch {
	case in.stateErr != nil:
		s.Check = StateUnreadable
	case !in.haveState:
		s.Check = StateMissing
	case in.saved.Seq < in.rp.seq:
		s.Check = StateBehind
	case in.saved.Seq > in.rp.seq:
		s.Check = StateAhead
	case !sameState(in.saved.State, in.rp.state):
		s.Check, s.Diff = StateDiffers, stateDiff(in.saved.State, in.rp.state)
	default:
		s.Check = StateCurrent
	}
	return s
}

// Inspect reads session id: its files, whether state.json matches the
// transcript, and every block with its tokens and archive.
func Inspect(opts Options, id string) (Inspection, error) {
	opts = opts.withDefaults()
	in, err := inspect(opts, id)
	if err != nil {
		return Inspection{}, err
	}
	st := in.rp.state
	out := Inspection{
		ID: id, Dir: in.dir, ArchiveDir: in.arch.Root,
		Records: len(in.tr.records), TranscriptBytes: in.trBytes, TornTail: in.tr.torn,
		StateFile: in.stateStatus(), State: st,
		Messages: len(in.rp.msgs), CutResults: len(in.rp.originals),
		OrphanArchives: orphanArchives(in.arch.Root, st),
	}
	for _, m := range in.rp.msgs {
		if m.ContentType == noa.CTToolCall {
			out.ToolCalls++
		}
	}
	absorbedBy := map[string]string{}
	for _, b := range st.Blocks {
		for _, c := range b.DirectBlockIDs {
			absorbedBy[c] = b.BlockID
		}
	}
	for _, b := range st.Blocks {
		path := filepath.Join(in.arch.Root, filepath.FromSlash(b.ArchiveRel))
		_, statErr := os.Stat(path)
		out.Blocks = append(out.Blocks, BlockInfo{
			CompressionBlock: b,
			CoveredTokens:    coveredTokens(b, st),
			SummaryTokens:    summaryTokens(b, in.count),
			Archive:          path,
			ArchiveMissing:   statErr != nil,
			AbsorbedBy:       absorbedBy[b.BlockID],
		})
	}
	return out, nil
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

// ReadOriginal returns the archive of one block (an id such as "b3"), or
// the original of one message (a ref such as "m00042"), verbatim.
func ReadOriginal(opts Options, id, name string) ([]byte, error) {
	opts = opts.withDefaults()
	in, err := inspect(opts, id)
	if err != nil {
		return nil, err
	}
	st := in.rp.state
	if b := noa.FindBlock(&st, name); b != nil {
		data, err := os.ReadFile(filepath.Join(in.arch.Root, filepath.FromSlash(b.ArchiveRel)))
		if err != nil {
			return nil, fmt.Errorf("reading the archive of %s: %w", b.BlockID, err)
		}
		return data, nil
	}
	if raw, ok := noa.RawForRef(st.MessageRefs, name); ok {
		if rel, cut := in.rp.originals[raw]; cut {
			data, err := os.ReadFile(filepath.Join(in.arch.Root, filepath.FromSlash(rel)))
			if err != nil {
				return nil, fmt.Errorf("reading the original of %s: %w", name, err)
			}
			return data, nil
		}
		for _, m := range in.rp.msgs {
			if m.ID == raw {
				return []byte(m.Text), nil
			}
		}
	}
	var ids []string
	for _, b := range st.Blocks {
		ids = append(ids, b.BlockID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("session %s has no block %q (it has no blocks yet)", id, name)
	}
	return nil, fmt.Errorf("session %s has no block or message %q; its blocks are %s", id, name, strings.Join(ids, ", "))
}

// RebuildReport is what Rebuild did.
type RebuildReport struct {
	// Records is how many transcript records were replayed, Seq the last.
	Records int
	Seq     int64
	// Replayed and Skipped count Compress calls replayed and recorded
	// calls that had created nothing.
	Replayed, Skipped int
	// Blocks and Refs size the rebuilt state.
	Blocks, Refs int
	// Before is what state.json was before the rebuild.
	Before StateStatus
	// Recreated are block archives that were missing and were written
	// again from the transcript.
	Recreated []string
	Warnings  []string
	// TornTail is set when the transcript's last record was cut short by a
	// crash; it is ignored, and dropped on the next open.
	TornTail bool
}

// Rebuild rebuilds a session's state from its transcript alone, recreating
// any missing block archive from the recorded originals, and writes it to
// state.json (atomically). It holds the session's lock throughout, so it
// fails with an *InUseError while a proxy (or another rebuild) has the
// session open.
func Rebuild(opts Options, id string) (rep RebuildReport, err error) {
	opts = opts.withDefaults()
	dir, err := sessionDir(opts, id)
	if err != nil {
		return rep, err
	}
	lock, err := lockSession(dir, id)
	if err != nil {
		return rep, err
	}
	defer func() {
		if rerr := lock.release(); err == nil {
			err = rerr
		}
	}()
	in, err := inspect(opts, id)
	if err != nil {
		return rep, err
	}
	if len(in.tr.records) == 0 {
		return rep, errors.New("the transcript is empty; there is nothing to rebuild")
	}
	before := in.stateStatus()
	rp := replayTranscript(in.tr.records, -1, id, in.arch, in.cfg, newMemo(in.count).count, true)
	b, err := encodeState(rp.seq, rp.state)
	if err != nil {
		return rep, err
	}
	if _, err := writeAtomic(opts.FS, filepath.Join(in.dir, StateFile), b); err != nil {
		return rep, fmt.Errorf("writing state.json: %w", err)
	}
	return RebuildReport{
		Records: len(in.tr.records), Seq: rp.seq,
		Replayed: rp.result.Replayed, Skipped: rp.result.Skipped,
		Blocks: len(rp.state.Blocks), Refs: len(rp.state.MessageRefs.ByRef),
		Before: before, Recreated: rp.recreated, Warnings: rp.result.Warnings, TornTail: in.tr.torn,
	}, nil
}

// FormatBytes renders a size as mcproxy shows sizes, to people (`sessions`
// listings) and in recorded texts (placeholders for media a result
// carried): "512 bytes", "2.9 KiB", "1.2 MiB".
func FormatBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
}
