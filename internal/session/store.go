package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Store keeps sessions where several mcproxy replicas reach them (issue
// 32: the PostgreSQL store, internal/pgstore). Without one (Options.Store
// nil, the default) a session lives in its directory alone, as it always
// has. With one, the directory is this replica's working copy: every write
// a host makes to it is made to the store too, in the same order and
// before the host answers (archives, then the transcript records, then
// state.json), and a Manager brings the copy up to the store before it
// hands a host out (Manager.HostWith), so a session written by another
// replica continues here.
//
// The store does not serialise writers: the front holds a lock across
// replicas for each turn (the gateway's Options.Lock). Append still
// refuses a batch that does not follow the stored records (ErrStale), so
// a writer that lost the race records nothing rather than a fork.
//
// Its methods must be safe for concurrent use. A session id the store does
// not hold reads as empty, not as an error.
type Store interface {
	// Head is the seq of the last record stored for session id; ok is
	// false when the store has no such session.
	Head(ctx context.Context, id string) (seq int64, ok bool, err error)
	// Append stores records first, first+1, ... (lines: their JSON
	// lines, one each, as in transcript.jsonl), durably when it returns.
	// It fails with ErrStale unless the stored records end at first-1.
	Append(ctx context.Context, id string, first int64, lines []byte) error
	// Records returns the JSON lines of the records after seq, in order.
	Records(ctx context.Context, id string, after int64) ([]byte, error)
	// PutState stores b, the state.json reflecting record seq, unless the
	// stored one reflects a later record.
	PutState(ctx context.Context, id string, seq int64, b []byte) error
	// State returns the stored state.json; ok is false when there is none.
	State(ctx context.Context, id string) (b []byte, ok bool, err error)
	// PutFile stores the session file rel (a path relative to the session
	// directory, with slashes: the archives, HostConfigFile, SessionFile),
	// creating the session when it is new.
	PutFile(ctx context.Context, id, rel string, b []byte) error
	// Files lists the session's stored files (their rel paths).
	Files(ctx context.Context, id string) ([]string, error)
	// File returns a stored file; an error wrapping fs.ErrNotExist when
	// there is none.
	File(ctx context.Context, id, rel string) ([]byte, error)
	// List describes every stored session.
	List(ctx context.Context) ([]StoredSession, error)
	// Remove deletes session id and everything stored with it.
	Remove(ctx context.Context, id string) error
}

// StoredSession is a session as Store.List describes it.
type StoredSession struct {
	ID string
	// Records is the seq of its last record; Bytes what its records,
	// state and files take.
	Records int64
	Bytes   int64
	// Updated is the time of its last write.
	Updated time.Time
}

// ErrStale is Store.Append's error for a batch that does not follow the
// stored records: another replica wrote the session since this one read
// it. The host records nothing more; the next Manager.HostWith reopens the
// session from the store.
var ErrStale = errors.New("the session was written by another replica since this one read it; it is reopened from the store at its next request")

// storeTimeout bounds each call a host makes to its Store.
const storeTimeout = 10 * time.Second

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// shareRecords stores a batch just written to the transcript (h.mu held).
func (h *Host) shareRecords(first int64, b []byte) error {
	if h.opts.Store == nil {
		return nil
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := h.opts.Store.Append(ctx, h.id, first, b); err != nil {
		if errors.Is(err, ErrStale) {
			// Nothing appended here can follow what the store holds.
			h.broken = err
		}
		return fmt.Errorf("storing the transcript: %w", err)
	}
	return nil
}

// shareState stores state.json b reflecting record seq.
func (h *Host) shareState(seq int64, b []byte) error {
	if h.opts.Store == nil {
		return nil
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := h.opts.Store.PutState(ctx, h.id, seq, b); err != nil {
		return fmt.Errorf("storing state: %w", err)
	}
	return nil
}

// shareFiles stores the session files Open may have written (the noa
// configuration and the tokenizer it was made with), which also creates
// the session in the store, and the state of a new session: another
// replica that continues it then finds one (state.json is otherwise first
// written Options.StateEvery turns on, and a missing one is repaired with
// a warning).
func (h *Host) shareFiles() error {
	if h.opts.Store == nil {
		return nil
	}
	if h.seq == 0 && h.stateOnDisk == 0 {
		if err := h.saveState(); err != nil {
			return err
		}
	}
	ctx, cancel := storeCtx()
	defer cancel()
	for _, name := range []string{HostConfigFile, SessionFile} {
		b, err := os.ReadFile(h.path(name))
		if notExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := h.opts.Store.PutFile(ctx, h.id, name, b); err != nil {
			return fmt.Errorf("storing %s: %w", name, err)
		}
	}
	return nil
}

// fetch brings the working copy of session id under dir up to what store
// holds (the store's last record is head): the records it lacks are
// appended to its transcript, state.json and the small files are written
// again, and archives it lacks are written (archives are never rewritten,
// so one present is current). A copy that holds records the store does
// not, or that cannot be read, is replaced whole. No host of the session
// may be open.
func fetch(ctx context.Context, store Store, fsys FS, dir, id string, head int64, log *zap.Logger) error {
	trPath := filepath.Join(dir, TranscriptFile)
	t, err := readTranscript(trPath)
	var local int64
	if len(t.records) > 0 {
		local = t.records[len(t.records)-1].Seq
	}
	if err != nil || local > head {
		log.Info("replacing the working copy of a session from the store", zap.String("session_id", id), zap.Int64("local", local), zap.Int64("stored", head), zap.Error(err))
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
		t, local = transcript{}, 0
	}
	// Read in the order opposite to the writes (archives, records, state):
	// a state read first reflects no record the records read next lack,
	// and every archive those records name was stored before the files
	// are listed, even while a replica writes the session meanwhile.
	state, haveState, err := store.State(ctx, id)
	if err != nil {
		return fmt.Errorf("fetching session %s: %w", id, err)
	}
	var lines []byte
	if local < head {
		if lines, err = store.Records(ctx, id, local); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
	}
	files, err := store.Files(ctx, id)
	if err != nil {
		return fmt.Errorf("fetching session %s: %w", id, err)
	}
	if err := fsys.MkdirAll(filepath.Join(dir, ArchiveDir), 0o700); err != nil {
		return fmt.Errorf("fetching session %s: %w", id, err)
	}
	for _, rel := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if !within(dir, path) {
			return fmt.Errorf("fetching session %s: the store holds a file outside the session (%q)", id, rel)
		}
		if strings.HasPrefix(rel, ArchiveDir+"/") {
			if _, err := os.Stat(path); err == nil {
				continue
			}
		}
		b, err := store.File(ctx, id, rel)
		if err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
		if err := fsys.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
		if _, err := writeAtomic(fsys, path, b); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
	}
	if len(lines) > 0 {
		if err := appendLines(fsys, trPath, t.valid, lines); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
	}
	if haveState {
		if state, err = rebase(state, filepath.Join(dir, ArchiveDir)); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
		if _, err := writeAtomic(fsys, filepath.Join(dir, StateFile), state); err != nil {
			return fmt.Errorf("fetching session %s: %w", id, err)
		}
	}
	return nil
}

// appendLines writes lines at offset off of the transcript at path (the
// end of its records: a reserve or a torn tail after it is cut) and makes
// them durable.
func appendLines(fsys FS, path string, off int64, lines []byte) error {
	f, err := fsys.OpenLog(path)
	if err != nil {
		return err
	}
	if err := fsys.Truncate(path, off); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteAt(lines, off); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rebase is state.json b with its archive paths moved to root: the
// replica that wrote it named its own working copy, and each replica's
// state names its own (as the state it rebuilds from the transcript does).
func rebase(b []byte, root string) ([]byte, error) {
	var saved savedState
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("decoding the stored state: %w", err)
	}
	saved.State.ArchiveRoot = root
	for i := range saved.State.Blocks {
		blk := &saved.State.Blocks[i]
		blk.ArchivePath = filepath.Join(root, filepath.FromSlash(blk.ArchiveRel))
	}
	return encodeState(saved.Seq, saved.State)
}

// Fetch writes a copy of stored session s into opts.Dir (from opts.Store),
// for the tools that read sessions through their files (List, Inspect,
// ReadOriginal: `mcproxy sessions` with a shared store). The copy's files
// carry the time of the session's last write in the store, which List
// reports as its last activity.
func Fetch(ctx context.Context, opts Options, s StoredSession) error {
	if opts.Store == nil {
		return errors.New("fetching a session: no store configured")
	}
	if !ValidSessionID(s.ID) {
		return fmt.Errorf("fetching a session: the store holds an invalid session id %q", s.ID)
	}
	opts = opts.withDefaults()
	dir := filepath.Join(opts.Dir, s.ID)
	if err := fetch(ctx, opts.Store, opts.FS, dir, s.ID, s.Records, opts.Logger); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, s.Updated, s.Updated)
	})
}
