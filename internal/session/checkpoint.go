package session

import (
	"fmt"

	"go.uber.org/zap"
)

// state.json is a checkpoint: Open rebuilds the session from the
// transcript whatever it says, and only checks it (and repairs it). Writing
// it costs an encoding of the whole state, O(messages), and two fsyncs (the
// file, then its directory), which on a busy disk is as much as several
// calls' own fsyncs. A host of a Manager therefore writes its periodic
// checkpoint (every Options.StateEvery turns) off the call path: the turn
// that is due queues the host in its Manager's pool (pool.go), whose
// goroutine copies the state under h.mu and encodes and writes it without
// holding it (issue 13: a small call_tool with noa on waited for it one
// call in sixteen). Compress, park and Close still write state.json
// themselves, before they return.

// stateShare bounds what the periodic checkpoints cost a turn: in a
// session of n messages one comes at most every n/stateShare turns, so
// its O(n) work (the state copied under h.mu, encoded with its maps'
// keys sorted, written) is spread over as many turns and the share each
// turn bears stays flat however long the session grows (issue 13). At
// 256 a checkpoint came every 64 turns up to 16,384 messages, and in a
// session of 6,000 messages its encoding was a quarter of the process's
// CPU on small calls, competing with them on a small machine; at 8 each
// turn bears the encoding of about 8 messages. Open replays the whole
// transcript whatever state.json says, so a checkpoint further behind
// costs a restart nothing.
const stateShare = 8

// checkpointDue reports whether the periodic state.json is due (h.mu
// held): StateEvery turns since the last one, and at least
// len(msgs)/stateShare.
func (h *Host) checkpointDue() bool {
	return h.unsaved >= max(h.opts.StateEvery, len(h.msgs)/stateShare)
}

// queueCheckpoint asks for state.json to be brought up to date (h.mu
// held). A host with no pool, or whose pool's queue is full, writes it
// now; a failure is logged, since the transcript holds the turn and Open
// brings state.json forward.
func (h *Host) queueCheckpoint() {
	if h.saving {
		return
	}
	if h.pool != nil && h.pool.checkpoint(h) {
		h.saving, h.unsaved = true, 0
		return
	}
	if err := h.saveState(); err != nil {
		h.log.Warn("writing state.json", zap.Error(err))
	}
}

// checkpoint writes state.json as it stands now, holding h.mu only to copy
// the state. A closed or parked host is skipped (Close and park write it
// themselves), and so is one whose state.json is current.
func (h *Host) checkpoint() error {
	h.mu.Lock()
	h.saving = false
	if h.closed || h.tr == nil || h.stateSeq == h.seq {
		h.mu.Unlock()
		return nil
	}
	seq, off, st := h.seq, h.trSize, h.eng.State()
	h.mu.Unlock()
	// Transcript, then state: state.json never reflects a record that is
	// not on disk.
	if err := h.durable(off); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	b, err := encodeState(seq, st)
	if err != nil {
		return err
	}
	if err := h.writeState(seq, b, true); err != nil {
		return err
	}
	h.mu.Lock()
	h.stateSeq = max(h.stateSeq, seq)
	h.mu.Unlock()
	return nil
}

// writeState replaces state.json with b, the state after record seq,
// unless the file already reflects a later record (a checkpoint copied
// before a Compress or Close wrote a newer one) or, with late set (a
// checkpoint, which holds neither h.mu nor, once the host is parked or
// closed, the session's lock), the same one.
func (h *Host) writeState(seq int64, b []byte, late bool) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if h.stateOnDisk > seq || late && h.stateOnDisk == seq {
		return nil
	}
	if _, err := writeAtomic(h.opts.FS, h.path(StateFile), b); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	if err := h.shareState(seq, b); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	h.stateOnDisk = seq
	return nil
}
