package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fileBytes reads a session's transcript as it is on disk.
func fileBytes(t *testing.T, h *Host) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Dir(), TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// While a session is open its records are followed by a zeroed reserve,
// which each record is written over; closing the session trims it, so a
// transcript at rest ends with its last record.
func TestTranscriptReserve(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	b := fileBytes(t, h)
	end := bytes.LastIndexByte(b, '\n') + 1
	if int64(end) != h.trSize || int64(len(b)) != h.trAlloc || len(b) < minReserve {
		t.Fatalf("file %d bytes, records end at %d (host: %d, %d); want the records then a reserve (%d bytes written after the first batch)",
			len(b), end, h.trSize, h.trAlloc, minReserve)
	}
	if len(bytes.TrimLeft(b[end:], "\x00")) != 0 {
		t.Fatal("the reserve holds something other than zeros")
	}
	grown := h.trAlloc
	call(t, h, "fs:b", "two")
	if h.trAlloc != grown {
		t.Errorf("a small record moved the file's end from %d to %d; want it written over the reserve", grown, h.trAlloc)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b = fileBytes(t, h)
	if int64(len(b)) != h.trSize || b[len(b)-1] != '\n' {
		t.Errorf("closed: file %d bytes, records %d; want the reserve trimmed", len(b), h.trSize)
	}
	h2 := openHost(t, testOptionsIn(opts.Dir), "s")
	if r := h2.Report(); r.TornTail || len(r.Warnings) != 0 || len(h2.Messages()) != 4 {
		t.Errorf("reopened: %+v, %d messages; want 4 and no repair", r, len(h2.Messages()))
	}
}

// Records that run past the reserve extend the file, with a new reserve
// after them.
func TestTranscriptReserveExtended(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	call(t, h, "fs:a", "one")
	before := h.trAlloc
	for rng := newRand(3); h.trSize <= before; {
		call(t, h, "fs:read", words(rng, 1500))
	}
	b := fileBytes(t, h)
	if h.trSize <= before || int64(len(b)) != h.trAlloc || h.trAlloc-h.trSize != reserveFor(h.trSize) {
		t.Errorf("records end at %d (reserve ended at %d), file %d bytes, host's end %d; want a new reserve of %d after the records",
			h.trSize, before, len(b), h.trAlloc, reserveFor(h.trSize))
	}
}

// A process that dies leaves its reserve; the next open trims it without
// a repair to report. Bytes in it other than zeros are a write that never
// became durable (a record cut short, or one whose later page reached the
// disk before its first): dropped and reported as a torn tail.
func TestTranscriptReserveAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail string // written over the start of the reserve
		torn bool
	}{
		{"zeros", "", false},
		{"a record cut short", `{"seq":9,"kind":"mess`, true},
		{"a record's end only", "\x00\x00\x00\x00" + `ssage"}` + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			h := openHost(t, opts, "s")
			call(t, h, "fs:a", "one")
			size := h.trSize
			crash(t, h)
			path := filepath.Join(h.Dir(), TranscriptFile)
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(tc.tail), size); err != nil {
				t.Fatal(err)
			}
			f.Close()
			h2 := openHost(t, testOptionsIn(opts.Dir), "s")
			if r := h2.Report(); r.TornTail != tc.torn || len(h2.Messages()) != 2 {
				t.Errorf("reopened: %+v with %d messages; want torn tail %v and the 2 messages", r, len(h2.Messages()), tc.torn)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != size {
				t.Errorf("reopened: transcript %v bytes (%v), want trimmed to the records' %d", fi.Size(), err, size)
			}
			call(t, h2, "fs:b", "two")
			h2.Close()
			tr, err := readTranscript(path)
			if err != nil || tr.torn || len(tr.records) != 4 {
				t.Errorf("after another call: %d records, torn %v, %v; want 4 clean records", len(tr.records), tr.torn, err)
			}
		})
	}
}

// BenchmarkTranscriptDurable measures what a small call's record costs
// until it is durable: written over the transcript's reserve and flushed
// (fdatasync), as the host does, against the same bytes appended to a
// file and fsync'd, as the host did before the reserve (the baseline, on
// the same disk, alternating with it in the same run). reserve/append is
// the ratio the reserve buys; the absolute figures are the disk's.
func BenchmarkTranscriptDurable(b *testing.B) {
	h := openHost(b, testOptions(b), "bench")
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "append.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	rec := record{Kind: "message", Message: &message{ID: "msg000001", Role: "tool", Type: "tool_result", Tool: "bench:echo",
		CallID: "call000001", Text: words(newRand(1), 50)}}
	line, err := encodeRecords([]record{rec})
	if err != nil {
		b.Fatal(err)
	}
	var reserve, appended time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h.mu.Lock()
		off, err := h.appendRecords(rec)
		h.mu.Unlock()
		if err == nil {
			err = h.durable(off)
		}
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		reserve, appended = reserve+mid.Sub(start), appended+time.Since(mid)
	}
	b.ReportMetric(float64(reserve.Nanoseconds())/float64(b.N), "reserve-ns/op")
	b.ReportMetric(float64(appended.Nanoseconds())/float64(b.N), "append-ns/op")
	b.ReportMetric(float64(reserve)/float64(appended), "reserve/append")
}
