package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Open opens the session id under opts.Dir, creating it when it does not
// exist. An existing session is rebuilt from its transcript; the result is
// checked against state.json and state.json is repaired when it is missing,
// behind, or different. The returned host must be closed.
//
// The host holds the session's lock (see LockFile) until Close: while it is
// open, another Open or Rebuild of the same session, in this process or
// another, fails with an *InUseError.
func Open(opts Options, id string) (*Host, error) { return OpenWith(opts, id, HostOptions{}) }

// HostOptions are what one host sets apart from the Options it shares with
// the others (see Manager.HostWith).
type HostOptions struct {
	// Noa, when set, is this host's noa configuration, used as given:
	// emergency truncation stays as it says (a model conversation's view is
	// really sent to the model, so there a cut is real), and a zero
	// ModelContextLimit is an error. The gateway paces each conversation
	// against its model's context window this way. The configuration must
	// stay the same across opens of one session: refs and blocks are
	// rebuilt with it (ProtectedTools, above all).
	Noa *noa.Config
	// OnlyOwn refuses a session that exists (has a transcript) but has no
	// HostConfigFile, that is one never opened with Noa set: an MCP
	// client's session. The gateway opens its conversations this way, so
	// that no id it is handed makes it read, serve the archives of, or
	// append to a session it did not create. It needs Noa.
	OnlyOwn bool
}

// OpenWith is Open with per-host options.
func OpenWith(opts Options, id string, ho HostOptions) (*Host, error) {
	if opts.Dir == "" {
		return nil, errors.New("opening session: no sessions directory configured")
	}
	if !ValidSessionID(id) {
		return nil, fmt.Errorf("opening session: invalid session id %q (want 1-128 of A-Z a-z 0-9 _ . -, not starting with a dot)", id)
	}
	opts = opts.withDefaults()
	if ho.Noa != nil {
		if ho.Noa.ModelContextLimit <= 0 {
			return nil, fmt.Errorf("opening session %s: HostOptions.Noa has no ModelContextLimit (the context window to pace against)", id)
		}
		opts.Noa = *ho.Noa
	}
	dir := filepath.Join(opts.Dir, id)
	h := &Host{
		id: id, dir: dir, opts: opts, cfg: opts.Noa,
		arch:      &Archiver{Root: filepath.Join(dir, ArchiveDir), FS: opts.FS, Store: opts.Store, ID: id},
		count:     newMemo(opts.Count),
		log:       opts.Logger.With(zap.String("session_id", id)),
		index:     map[string]int{},
		originals: map[string]string{},
		reserved:  map[string]string{},
	}
	if opts.verify {
		h.verify = &verifier{}
	}
	if err := opts.FS.MkdirAll(h.arch.Root, 0o700); err != nil {
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	// Nothing is read or repaired before the lock is ours: another writer
	// may be mid-append.
	lock, err := lockSession(dir, id)
	if err != nil {
		var inUse *InUseError
		if errors.As(err, &inUse) {
			return nil, err
		}
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	if ho.OnlyOwn {
		// Under the lock: a session being created holds it until its
		// HostConfigFile and transcript are both written.
		if err := checkOwn(dir, ho); err != nil {
			_ = lock.release()
			return nil, fmt.Errorf("opening session %s: %w", id, err)
		}
	}
	cfg, changed, err := hostConfig(opts.FS, dir, ho.Noa)
	if err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	if counted, err := sessionTokenizer(h.opts, dir, true); err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	} else if counted.Tokenizer != h.opts.Tokenizer {
		h.log.Info("session is counted with the tokenizer it was made with", zap.String("tokenizer", counted.Tokenizer), zap.String("configured", h.opts.Tokenizer))
		h.opts.Tokenizer, h.opts.Count = counted.Tokenizer, counted.Count
		h.count = newMemo(counted.Count)
	}
	if cfg != nil {
		if changed {
			h.log.Info("session keeps the noa configuration it was created with",
				zap.Int("context_limit", cfg.ModelContextLimit), zap.Int("asked_context_limit", ho.Noa.ModelContextLimit))
		}
		h.opts.Noa, h.cfg = *cfg, *cfg
	}
	if err := h.load(); err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	tr, err := opts.FS.OpenLog(h.path(TranscriptFile))
	if err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	if err := h.shareFiles(); err != nil {
		_ = tr.Close()
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	h.tr, h.lock = tr, lock
	for _, w := range h.report.Warnings {
		h.log.Warn("session restored with a repair", zap.String("detail", w))
	}
	return h, nil
}

// checkOwn is HostOptions.OnlyOwn's check of the session in dir.
func checkOwn(dir string, ho HostOptions) error {
	if ho.Noa == nil {
		return errors.New("HostOptions.OnlyOwn needs HostOptions.Noa")
	}
	if _, err := os.Stat(filepath.Join(dir, HostConfigFile)); err == nil || !notExist(err) {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, TranscriptFile)); notExist(err) {
		return nil // a new session
	} else if err != nil {
		return err
	}
	return ErrNotOwned
}

// load restores the session from disk (nothing to do for a new one).
func (h *Host) load() error {
	trPath := h.path(TranscriptFile)
	t, err := readTranscript(trPath)
	if err != nil {
		return err
	}
	rep := &h.report
	rep.Records = len(t.records)
	if t.torn {
		// A record cut short by a crash is not part of the session; cut it
		// off so the next append starts on a clean line.
		rep.TornTail = true
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("dropped a record cut short at byte %d of the transcript (an interrupted write)", t.valid))
	}
	if t.torn || t.reserve {
		// The reserve of a session that was not closed goes too (trfile.go).
		if err := h.opts.FS.Truncate(trPath, t.valid); err != nil && t.torn {
			return fmt.Errorf("dropping the torn last record: %w", err)
		} else if err != nil {
			return fmt.Errorf("trimming the transcript's reserve: %w", err)
		}
	}
	// What was read is the transcript durable() starts from.
	h.trSize, h.trAlloc, h.syncedTo = t.valid, t.valid, t.valid
	h.written.Store(t.valid)
	saved, haveState, err := readState(h.path(StateFile))
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		haveState = false
	}
	if len(t.records) == 0 {
		h.startEngine(nil, noa.CreateInitialState(h.id, h.arch.Root))
		if haveState && len(saved.State.Blocks) > 0 {
			rep.StateMismatch = true
			rep.Warnings = append(rep.Warnings, "state.json lists blocks but the transcript is empty; the state was reset")
		}
		return nil
	}
	full := replayTranscript(t.records, -1, h.id, h.arch, h.cfg, h.count.count, false)
	rep.Replayed, rep.Skipped = full.result.Replayed, full.result.Skipped
	rep.Warnings = append(rep.Warnings, full.result.Warnings...)
	rep.MissingArchives = full.missing
	switch {
	case !haveState:
		rep.StateMissing = true
		rep.Warnings = append(rep.Warnings, "state.json was missing; rebuilt from the transcript")
	case saved.Seq > full.seq:
		rep.StateMismatch = true
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("state.json reflects record %d but the transcript ends at %d; rebuilt from the transcript", saved.Seq, full.seq))
	default:
		at := full
		if saved.Seq < full.seq {
			rep.StateBehind = true
			at = replayTranscript(t.records, saved.Seq, h.id, h.arch, h.cfg, h.count.count, false)
		}
		if !sameState(saved.State, at.state) {
			rep.StateMismatch = true
			rep.Warnings = append(rep.Warnings, "state.json differs from the state rebuilt from the transcript ("+stateDiff(saved.State, at.state)+
				"); the transcript wins. A changed tokenizer or protected_tools since the session was written causes this, and can renumber refs")
		}
	}
	h.originals, h.seq, h.engaged = full.originals, full.seq, full.engaged
	for _, m := range full.msgs {
		h.push(m)
	}
	h.startEngine(h.msgs, full.state)
	h.nextID = highestID(h.msgs)
	rep.OrphanArchives = orphanArchives(h.arch.Root, full.state)
	if rep.StateMissing || rep.StateBehind || rep.StateMismatch {
		if err := h.saveState(); err != nil {
			return err
		}
	} else {
		h.stateSeq, h.stateOnDisk = saved.Seq, saved.Seq
	}
	return nil
}

// highestID is the largest number used by a message or call id, so new ids
// continue after it. (Counting messages would not do: a call whose result
// was never recorded reserved a number that a later message may not take,
// and one that a recorded message may have taken after it.)
func highestID(msgs []noa.CoreMessage) int {
	hi := 0
	for _, m := range msgs {
		for _, s := range []string{strings.TrimPrefix(m.ID, "msg"), strings.TrimPrefix(m.ToolCallID, "call")} {
			if n, err := strconv.Atoi(s); err == nil && n > hi {
				hi = n
			}
		}
	}
	return hi
}
