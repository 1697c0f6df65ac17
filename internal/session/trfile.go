package session

import (
	"fmt"

	"go.uber.org/zap"
)

// The transcript's reserve. Each call's records must be durable before the
// call is answered, and on ext4 an fsync after an append costs a journal
// commit (the file's size changed) on top of the data flush: about 200 µs
// on this project's machines, a third of a small call through mcproxy.
// Bytes written over zeros that are already on disk change no metadata, so
// their fdatasync is the data flush alone (0.7 of the fsync after an
// append on this disk, BenchmarkTranscriptDurable). The host therefore
// keeps a stretch of zeros (the reserve) after its last record, written
// and made durable together with the record that ran past the previous
// one, and writes each batch of records over it.
//
// JSON lines never hold a raw NUL (encoding/json writes \u0000), so a
// reader knows where the records end: at the first line holding a NUL
// byte (readTranscript). While a session is open its transcript ends in
// its reserve; parking or closing the session trims it, and reopening a
// transcript a crash left with one trims it too.

// Reserve sizes: a quarter of the transcript, from 64 KiB to 1 MiB, so a
// short session costs little disk (and at most 64 sessions are open at a
// time, pool.go) and a long one extends rarely.
const (
	minReserve = 64 << 10
	maxReserve = 1 << 20
)

var zeros [maxReserve]byte

// reserveFor is the reserve written after records that end at size.
func reserveFor(size int64) int64 { return min(max(size/4, minReserve), maxReserve) }

// writeRecords writes b at the end of the records (h.mu held, h.tr open)
// and, when b runs past the reserve, writes a new reserve after it. The
// records' offsets are h.trSize's business; a failed write of the
// reserve only costs the next batch the journal commit, and is logged.
func (h *Host) writeRecords(b []byte) error {
	off := h.trSize
	if _, err := h.tr.WriteAt(b, off); err != nil {
		return err
	}
	end := off + int64(len(b))
	if end <= h.trAlloc {
		return nil
	}
	n := reserveFor(end)
	if _, err := h.tr.WriteAt(zeros[:n], end); err != nil {
		// A full disk takes part of the reserve: cut what landed, which
		// the records after it need, so the file ends where trAlloc says
		// (a parked host that finds it longer is taken as written by
		// another process, unpark). Readers stop at the zeros anyway.
		h.trAlloc = end
		if terr := h.opts.FS.Truncate(h.path(TranscriptFile), end); terr != nil {
			h.trAlloc = end + n // at most this long; trimReserve cuts it
		}
		h.log.Debug("writing the transcript's reserve failed; the next record appends", zap.Error(err))
		return nil
	}
	h.trAlloc = end + n
	return nil
}

// trimReserve cuts the reserve off the transcript (h.mu held), before the
// file is closed: a transcript at rest ends with its last record. The cut
// need not be durable: a reserve a crash leaves behind is trimmed when the
// session is reopened.
func (h *Host) trimReserve() error {
	if h.trAlloc <= h.trSize {
		return nil
	}
	if err := h.opts.FS.Truncate(h.path(TranscriptFile), h.trSize); err != nil {
		return fmt.Errorf("trimming the transcript's reserve: %w", err)
	}
	h.trAlloc = h.trSize
	return nil
}
