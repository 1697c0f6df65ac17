package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// RetentionInterval is how often a Manager with a retention period prunes
// (it also prunes when it starts).
const RetentionInterval = 24 * time.Hour

// Pruned is a session Prune removed (or, on a dry run, would remove).
type Pruned struct {
	ID string
	// LastTouched is when anything in its directory was last written.
	LastTouched time.Time
	// Bytes is the size of its directory.
	Bytes int64
}

// PruneReport is what one Prune did.
type PruneReport struct {
	// Removed are the sessions removed (on a dry run, those that would
	// be), oldest first; Bytes their total size.
	Removed []Pruned
	Bytes   int64
	// InUse are sessions old enough to go that an open host holds (in
	// this process or another): never removed.
	InUse []string
	// Errors are sessions that could not be removed, with why.
	Errors []error
}

// Prune removes the sessions under opts.Dir that nothing has touched for
// olderThan or longer (by opts.Now), judged by the newest modification time
// of the session directory and the files and directories directly in it.
// A session that an open host holds (a live proxy, a rebuild, a Manager's
// own host) is never removed: Prune takes the session's lock first, checks
// the age again under it, and removes the directory only then. With dryRun
// nothing is removed and the report lists what would be. olderThan must be
// positive.
func Prune(opts Options, olderThan time.Duration, dryRun bool) (PruneReport, error) {
	var rep PruneReport
	if olderThan <= 0 {
		return rep, fmt.Errorf("pruning sessions: the age must be positive, got %v", olderThan)
	}
	opts = opts.withDefaults()
	cutoff := opts.Now().Add(-olderThan)
	if opts.Store != nil {
		// The store's sessions, and then what Dir holds besides: this
		// replica's own sessions, and working copies (a copy removed is
		// fetched again when its session is next used).
		rep, err := pruneStore(opts, cutoff, dryRun)
		if err != nil {
			return rep, err
		}
		local := opts
		local.Store = nil
		lrep, err := Prune(local, olderThan, dryRun)
		seen := map[string]bool{}
		for _, p := range rep.Removed {
			seen[p.ID] = true
		}
		for _, p := range lrep.Removed {
			if !seen[p.ID] {
				rep.Removed = append(rep.Removed, p)
				rep.Bytes += p.Bytes
			}
		}
		rep.InUse = append(rep.InUse, lrep.InUse...)
		rep.Errors = append(rep.Errors, lrep.Errors...)
		sort.Slice(rep.Removed, func(i, j int) bool { return rep.Removed[i].LastTouched.Before(rep.Removed[j].LastTouched) })
		return rep, err
	}
	entries, err := os.ReadDir(opts.Dir)
	if notExist(err) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("pruning sessions: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !ValidSessionID(e.Name()) {
			continue
		}
		dir := filepath.Join(opts.Dir, e.Name())
		if t, err := lastTouched(dir); err != nil || t.After(cutoff) {
			continue
		}
		p, err := pruneOne(dir, e.Name(), cutoff, dryRun)
		var inUse *InUseError
		switch {
		case errors.As(err, &inUse):
			rep.InUse = append(rep.InUse, e.Name())
		case err != nil:
			rep.Errors = append(rep.Errors, err)
		case p != nil:
			rep.Removed = append(rep.Removed, *p)
			rep.Bytes += p.Bytes
		}
	}
	sort.Slice(rep.Removed, func(i, j int) bool { return rep.Removed[i].LastTouched.Before(rep.Removed[j].LastTouched) })
	return rep, nil
}

// pruneOne removes one session directory under its lock when it is still
// untouched since cutoff; nil when it was touched meanwhile.
func pruneOne(dir, id string, cutoff time.Time, dryRun bool) (*Pruned, error) {
	lock, err := lockSession(dir, id)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	// Again under the lock: a host may have written it since.
	t, err := lastTouched(dir)
	if err != nil {
		return nil, fmt.Errorf("pruning session %s: %w", id, err)
	}
	if t.After(cutoff) {
		return nil, nil
	}
	size, err := dirSize(dir)
	if err != nil {
		return nil, fmt.Errorf("pruning session %s: %w", id, err)
	}
	p := &Pruned{ID: id, LastTouched: t, Bytes: size}
	if dryRun {
		return p, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pruning session %s: %w", id, err)
	}
	return p, nil
}

// lastTouched is the newest modification time of dir and of what is
// directly in it (transcript, state.json, the archive directory), the lock
// file aside: taking the lock writes it, and Prune itself takes it.
func lastTouched(dir string) (time.Time, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, err
	}
	t := fi.ModTime()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return time.Time{}, err
	}
	for _, e := range entries {
		if e.Name() == LockFile {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().After(t) {
			t = info.ModTime()
		}
	}
	return t, nil
}

// dirSize is the total size of the regular files under dir (the lock
// file, which holds only its holder's pid, aside).
func dirSize(dir string) (int64, error) {
	var n int64
	lock := filepath.Join(dir, LockFile)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && path != lock {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// retain prunes sessions older than the retention period now and every
// interval until stop is closed. It is the Manager's goroutine (owner: the
// Manager; stopped by Close); a panic is logged, not raised.
func (m *Manager) retain(stop <-chan struct{}, done chan<- struct{}, interval time.Duration) {
	defer close(done)
	log := m.opts.Logger
	prune := func() {
		defer goroutine.Recover(log, "session retention", nil)
		rep, err := Prune(m.opts, m.opts.Retention, false)
		if err != nil {
			log.Warn("pruning old sessions", zap.Error(err))
			return
		}
		for _, p := range rep.Removed {
			log.Info("removed a session untouched for longer than noa.retention", zap.String("session_id", p.ID),
				zap.Time("last_touched", p.LastTouched), zap.Int64("bytes", p.Bytes), zap.Duration("retention", m.opts.Retention))
		}
		for _, err := range rep.Errors {
			log.Warn("pruning old sessions", zap.Error(err))
		}
		if m.opts.OnPrune != nil {
			m.opts.OnPrune(rep)
		}
	}
	prune()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			prune()
		}
	}
}

// pruneStore is Prune with a Store: the sessions it holds that no replica
// has written since cutoff go, from the store and from this replica's
// working copies. A session open in this process is kept (InUse); one open
// in another replica only idly (written before cutoff) is not known here,
// and its next request starts it anew.
func pruneStore(opts Options, cutoff time.Time, dryRun bool) (PruneReport, error) {
	var rep PruneReport
	ctx, cancel := storeCtx()
	defer cancel()
	all, err := opts.Store.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("pruning sessions: %w", err)
	}
	for _, s := range all {
		if s.Updated.After(cutoff) {
			continue
		}
		p := Pruned{ID: s.ID, LastTouched: s.Updated, Bytes: s.Bytes}
		if dryRun {
			rep.Removed = append(rep.Removed, p)
			rep.Bytes += p.Bytes
			continue
		}
		dir := filepath.Join(opts.Dir, s.ID)
		lock, err := lockSession(dir, s.ID)
		var inUse *InUseError
		switch {
		case errors.As(err, &inUse):
			rep.InUse = append(rep.InUse, s.ID)
			continue
		case err != nil && !notExist(err):
			rep.Errors = append(rep.Errors, fmt.Errorf("pruning session %s: %w", s.ID, err))
			continue
		}
		err = opts.Store.Remove(ctx, s.ID)
		if err == nil {
			err = os.RemoveAll(dir)
		}
		if lock != nil {
			_ = lock.release()
		}
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("pruning session %s: %w", s.ID, err))
			continue
		}
		rep.Removed = append(rep.Removed, p)
		rep.Bytes += p.Bytes
	}
	sort.Slice(rep.Removed, func(i, j int) bool { return rep.Removed[i].LastTouched.Before(rep.Removed[j].LastTouched) })
	return rep, nil
}
