package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// ResultsDir is the archive subdirectory holding the originals of results
// that were returned cut to size.
const ResultsDir = "results"

// Archiver stores a session's archives under Root (<session dir>/archive):
// block archives at tier<N>/<block>_<start>-<end>.md and cut results at
// results/<message id>.txt. Every write is atomic (temporary file, fsync,
// rename, fsync of the directory). It implements noa.Archiver.
type Archiver struct {
	// Root is the archive directory; FS performs the I/O (nil = OS).
	Root string
	FS   FS
	// Store, when set, receives every archive written, before Write
	// returns, as the file of session ID (Options.Store). nil = none.
	Store Store
	ID    string
}

var _ noa.Archiver = (*Archiver)(nil)

func (a *Archiver) fs() FS {
	if a.FS == nil {
		return OS{}
	}
	return a.FS
}

// Write implements noa.Archiver. On failure nothing is left at the target
// path, so noa's rollback of a batch leaves the disk as it was.
func (a *Archiver) Write(tier noa.Tier, blockID, startRef, endRef string, content []byte) (string, string, error) {
	rel := filepath.ToSlash(filepath.Join(noa.ArchiveTierDir(tier), noa.ArchiveFileName(blockID, startRef, endRef)))
	abs := filepath.Join(a.Root, filepath.FromSlash(rel))
	if err := a.write(abs, content); err != nil {
		return "", "", fmt.Errorf("archiving %s: %w", blockID, err)
	}
	if err := a.share(abs, rel, content); err != nil {
		return "", "", fmt.Errorf("archiving %s: %w", blockID, err)
	}
	return abs, rel, nil
}

// Remove implements noa.Archiver; it only removes files under Root.
func (a *Archiver) Remove(abs string) error {
	if !within(a.Root, abs) {
		return fmt.Errorf("removing %s: not inside the archive %s", abs, a.Root)
	}
	if err := a.fs().Remove(abs); err != nil {
		return fmt.Errorf("removing %s: %w", abs, err)
	}
	return nil
}

// WriteResult archives the original text of a result that is returned cut
// to size, under results/<id>.txt, and returns the path relative to Root.
func (a *Archiver) WriteResult(id string, content string) (string, error) {
	rel := ResultsDir + "/" + id + ".txt"
	// Written from the string, not a []byte copy of it: an os.File writes
	// a string as it is, and a 5 MB argument is one copy fewer (issue 28).
	abs := filepath.Join(a.Root, filepath.FromSlash(rel))
	renamed, err := writeAtomicFill(a.fs(), abs, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	})
	if err != nil && renamed {
		_ = a.fs().Remove(abs)
	}
	if err == nil {
		err = a.share(abs, rel, []byte(content))
	}
	if err != nil {
		return "", fmt.Errorf("archiving result %s: %w", id, err)
	}
	return rel, nil
}

// share stores the archive just written at abs (rel to Root) in a.Store;
// when that fails the file is removed again, so the archive is written
// everywhere or nowhere.
func (a *Archiver) share(abs, rel string, content []byte) error {
	if a.Store == nil {
		return nil
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := a.Store.PutFile(ctx, a.ID, ArchiveDir+"/"+rel, content); err != nil {
		_ = a.fs().Remove(abs)
		return fmt.Errorf("storing the archive: %w", err)
	}
	return nil
}

// RemoveResult removes the archived original rel (as WriteResult returned
// it): the original of a result whose record was never written.
func (a *Archiver) RemoveResult(rel string) error {
	return a.Remove(filepath.Join(a.Root, filepath.FromSlash(rel)))
}

func (a *Archiver) write(abs string, content []byte) error {
	renamed, err := writeAtomic(a.fs(), abs, content)
	if err != nil && renamed {
		_ = a.fs().Remove(abs)
	}
	return err
}

// within reports whether path lies inside root.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// replayArchiver is the Archiver noa.RebuildStateFromLog replays against.
// The archives of a recorded compression already exist and must not be
// rewritten, so Write only checks that the file is there and reports its
// path; a missing archive is an error unless repair is set, in which case it
// is recreated from the transcript (the originals are recorded there too).
// Remove deletes only files this replay created, never an original archive.
type replayArchiver struct {
	a       *Archiver
	repair  bool
	created map[string]bool
	// missing and recreated list relative paths, for the report.
	missing, recreated []string
}

func (r *replayArchiver) Write(tier noa.Tier, blockID, startRef, endRef string, content []byte) (string, string, error) {
	rel := filepath.ToSlash(filepath.Join(noa.ArchiveTierDir(tier), noa.ArchiveFileName(blockID, startRef, endRef)))
	abs := filepath.Join(r.a.Root, filepath.FromSlash(rel))
	if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
		return abs, rel, nil
	}
	if !r.repair {
		r.missing = append(r.missing, rel)
		return "", "", fmt.Errorf("archive %s is missing", rel)
	}
	if _, _, err := r.a.Write(tier, blockID, startRef, endRef, content); err != nil {
		return "", "", err
	}
	if r.created == nil {
		r.created = map[string]bool{}
	}
	r.created[abs] = true
	r.recreated = append(r.recreated, rel)
	return abs, rel, nil
}

func (r *replayArchiver) Remove(abs string) error {
	if !r.created[abs] {
		return nil
	}
	delete(r.created, abs)
	return r.a.Remove(abs)
}
