package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// slowSyncFS is the real file system with a transcript whose fsync takes
// a while, as on a real disk (tmpfs syncs instantly, so no two calls would
// ever meet at one). It counts the transcript's fsyncs and remembers how
// many bytes the last completed one covered.
type slowSyncFS struct {
	OS
	delay time.Duration

	mu      sync.Mutex
	syncs   int
	written int64 // bytes written to the transcript
	synced  int64 // bytes written before the last completed fsync began
}

func (f *slowSyncFS) OpenLog(path string) (LogFile, error) {
	file, err := f.OS.OpenLog(path)
	if err != nil || filepath.Base(path) != TranscriptFile {
		return file, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.written, f.synced = fi.Size(), fi.Size()
	f.mu.Unlock()
	return &slowSyncFile{LogFile: file, fs: f}, nil
}

type slowSyncFile struct {
	LogFile
	fs *slowSyncFS
}

// WriteAt counts the bytes up to the end of the furthest record written:
// the zeros of the reserve written ahead of the records (trfile.go) are
// not records, and counting them would make one flush cover records
// written after it.
func (f *slowSyncFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.LogFile.WriteAt(p, off)
	end := bytes.LastIndexFunc(p[:n], func(r rune) bool { return r != 0 }) + 1
	f.fs.mu.Lock()
	if end > 0 {
		f.fs.written = max(f.fs.written, off+int64(end))
	}
	f.fs.mu.Unlock()
	return n, err
}

func (f *slowSyncFile) Sync() error {
	f.fs.mu.Lock()
	upto := f.fs.written
	f.fs.syncs++
	f.fs.mu.Unlock()
	time.Sleep(f.fs.delay)
	err := f.LogFile.Sync()
	f.fs.mu.Lock()
	f.fs.synced = max(f.fs.synced, upto)
	f.fs.mu.Unlock()
	return err
}

// coveredBy reports whether the transcript line holding message id ends
// within the bytes the last completed fsync covered.
func (f *slowSyncFS) coveredBy(t *testing.T, path, id string) bool {
	t.Helper()
	f.mu.Lock()
	synced := f.synced
	f.mu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte(`"id":"`+id+`"`))
	if at < 0 {
		return false
	}
	end := at + bytes.IndexByte(data[at:], '\n') + 1
	return int64(end) <= synced
}

// Calls of one session that finish together share fsyncs (group commit),
// and every call's records are on disk when it is answered.
func TestGroupCommit(t *testing.T) {
	opts := testOptions(t)
	opts.StateEvery = 1 << 20 // state.json's own fsyncs aside
	fs := &slowSyncFS{delay: 3 * time.Millisecond}
	opts.FS = fs
	h := openHost(t, opts, "s")
	const workers, calls = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := newRand(int64(w))
			for i := 0; i < calls; i++ {
				rec, err := h.Record(context.Background(), toolCall(fmt.Sprintf("fs:read_%d", w), []byte(`{}`)))
				if err != nil {
					errs <- err
					return
				}
				if !fs.coveredBy(t, filepath.Join(h.Dir(), TranscriptFile), rec[0].ID) {
					errs <- fmt.Errorf("worker %d call %d: the call %s was answered before its record was fsync'd", w, i, rec[0].ID)
				}
				turn, err := h.Turn(context.Background(), toolResult(rec[0], words(rng, 50)))
				if err != nil {
					errs <- err
					return
				}
				if id := turn.Recorded[0].ID; !fs.coveredBy(t, filepath.Join(h.Dir(), TranscriptFile), id) {
					errs <- fmt.Errorf("worker %d call %d: the result %s was answered before its record was fsync'd", w, i, id)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fs.mu.Lock()
	syncs := fs.syncs
	fs.mu.Unlock()
	appends := workers * calls * 2
	t.Logf("%d appends, %d fsyncs", appends, syncs)
	if syncs >= appends/2 {
		t.Errorf("%d fsyncs for %d appends of %d concurrent callers; want them shared (fewer than %d)", syncs, appends, workers, appends/2)
	}
	if got := len(h.Messages()); got != appends {
		t.Errorf("%d messages recorded, want %d", got, appends)
	}
}

// A call recorded with RecordUnsynced costs no fsync of its own: the Turn
// that records its result makes both durable with one.
func TestRecordUnsyncedSharesTheResultsFsync(t *testing.T) {
	opts := testOptions(t)
	opts.StateEvery = 1 << 20
	fs := &slowSyncFS{}
	opts.FS = fs
	h := openHost(t, opts, "s")
	path := filepath.Join(h.Dir(), TranscriptFile)
	for i := 0; i < 5; i++ {
		rec, err := h.RecordUnsynced(context.Background(), toolCall("fs:read", []byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		turn, err := h.Turn(context.Background(), toolResult(rec[0], "text"))
		if err != nil {
			t.Fatal(err)
		}
		if !fs.coveredBy(t, path, rec[0].ID) || !fs.coveredBy(t, path, turn.Recorded[0].ID) {
			t.Fatalf("call %d answered before its records were fsync'd", i)
		}
	}
	if fs.syncs != 5 {
		t.Errorf("%d fsyncs for 5 calls, want 5 (one per call)", fs.syncs)
	}
}

// With FlushEvery (noa.fsync "every_second") a call is answered once its
// records are written, with no flush of its own; the pool flushes them
// within FlushEvery, and Close flushes whatever is left. Without it every
// call flushes before it is answered (TestGroupCommit).
func TestFlushEvery(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
	}{{"periodic flush", 20 * time.Millisecond}, {"flushed at close", time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.StateEvery = 1 << 20 // state.json's own fsyncs aside
			fs := &slowSyncFS{}
			opts.FS, opts.FlushEvery = fs, tc.every
			m := NewManager(opts)
			defer m.Close()
			h, err := m.Host("s")
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for i := 0; i < 5; i++ {
				last = call(t, h, "fs:read", fmt.Sprintf("result %d", i)).Recorded[0].ID
			}
			path := filepath.Join(h.Dir(), TranscriptFile)
			fs.mu.Lock()
			syncs := fs.syncs
			fs.mu.Unlock()
			if tc.every == time.Hour {
				if syncs != 0 || fs.coveredBy(t, path, last) {
					t.Fatalf("%d flushes during 5 calls (the last one covered: %v); want none before the periodic flush", syncs, fs.coveredBy(t, path, last))
				}
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); !fs.coveredBy(t, path, last); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the last result was not flushed within 10s")
				}
			}
			if tr, err := readTranscript(path); err != nil || len(tr.records) != 10 {
				t.Errorf("transcript: %d records, %v; want 10", len(tr.records), err)
			}
			if tc.every == time.Hour {
				return
			}
			// After an idle spell (no flush is pending, so no timer runs),
			// the next call is flushed within FlushEvery again.
			time.Sleep(3 * tc.every)
			last = call(t, h, "fs:read", "after idling").Recorded[0].ID
			for deadline := time.Now().Add(10 * time.Second); !fs.coveredBy(t, path, last); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("a call made after the pool idled was not flushed within 10s")
				}
			}
		})
	}
}
