package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/jsonspan"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// Message is one message of a session's stream as a caller hands it to
// Record or Turn: noa's message plus what the host keeps beside it. A front
// converts whatever it sees (an MCP tools/call and its result, a model
// request's user, assistant, reasoning and tool parts) into these.
type Message struct {
	noa.CoreMessage
	// IsError marks a tool result that reports a failure. noa does not read
	// it; the transcript keeps it for whoever reads the session.
	IsError bool
	// CutToSize asks for a size cut: a Text above Options.MaxResultTokens
	// is archived verbatim and recorded (and returned) as its head and
	// tail, joined by noa's truncation marker and the read_archive call
	// that returns the part cut out. When the original cannot be archived
	// the text stays whole, since cutting what cannot be recovered would
	// lose it.
	CutToSize bool
	// Original is set by the host on the messages it returns, when it cut
	// the text: the archived original's path relative to the archive
	// directory. It must be empty on input.
	Original string
}

// Record appends msgs to the session's stream without running noa: one
// transcript write, fsync'd before Record returns (an fsync shared with
// the calls of the session that record at the same time; see durable).
// It returns the messages as recorded, in order:
//
//   - a message without an ID is numbered (msg000001, ...); a tool call
//     without a ToolCallID gets the matching call000001, and the number
//     after it is kept for the call's result, so a result recorded later
//     without an ID takes it (a call and its result read as a pair in the
//     transcript however many calls run in between);
//   - a tool result without a ToolCallID that follows a tool call in the
//     same batch answers that call (a front recording a call and its
//     result at once);
//   - a message with an ID keeps it; the ID must be new to the session;
//   - a CutToSize message over the size limit comes back cut (see Message).
//
// Nothing is recorded when any message is invalid or the write fails. When
// the fsync fails the records stay written but the error is returned and
// the session records nothing more until it is reopened.
func (h *Host) Record(ctx context.Context, msgs ...Message) ([]Message, error) {
	out, off, err := h.record(ctx, msgs)
	if err != nil {
		return nil, err
	}
	if err := h.committed(off); err != nil {
		return nil, err
	}
	return out, nil
}

// RecordUnsynced is Record without waiting for the fsync: it returns once
// the records are written, and they reach the disk with the session's next
// fsync, at the latest that of the next Record, Turn or Compress (every
// fsync covers all that was written before it). The MCP front records a
// tool call this way: the call's result, recorded with a Turn after it,
// makes both durable before the client is answered, for one fsync per
// call. A crash before then loses the record of a call that was never
// answered.
func (h *Host) RecordUnsynced(ctx context.Context, msgs ...Message) ([]Message, error) {
	out, _, err := h.record(ctx, msgs)
	return out, err
}

// record is Record up to the fsync, under the lock; it returns the
// transcript offset that must be durable before the caller answers.
func (h *Host) record(ctx context.Context, msgs []Message) ([]Message, int64, error) {
	if err := h.begin(ctx); err != nil {
		return nil, 0, err
	}
	defer h.mu.Unlock()
	defer h.count.release()
	b, err := h.stage(msgs, false)
	if err != nil {
		return nil, 0, err
	}
	off, err := h.appendRecords(b.recs...)
	if err != nil {
		b.undo(h)
		return nil, 0, err
	}
	h.eng.Append(h.msgs[b.n0:]...)
	b.commit(h)
	// The engine counts the new messages now, while this call's large
	// texts are still counted (learnRefs syncs it: O(new messages)).
	h.learnRefs()
	return b.out, off, nil
}

// batch is messages pushed onto the stream and about to be recorded; undo
// takes them back off, commit keeps them.
type batch struct {
	n0, total0 int
	// dry is a batch staged only to be looked at (Peek): nothing was
	// archived for it.
	dry       bool
	out       []Message
	recs      []record
	predicted []string // the ref each cut message's pointer names
	reserved  []string // tool call ids whose result ids it reserved
}

// stage validates msgs, numbers them, cuts the oversize ones and pushes
// them onto the stream, returning what is needed to record them. Called
// with h.mu held; on error nothing is left pushed.
func (h *Host) stage(msgs []Message, dry bool) (*batch, error) {
	b := &batch{n0: len(h.msgs), total0: h.total, dry: dry, out: make([]Message, 0, len(msgs)), recs: make([]record, 0, len(msgs)+1)}
	seen := map[string]bool{}
	nextID := h.nextID
	for i, m := range msgs {
		if err := h.check(m, seen); err != nil {
			b.undo(h)
			h.nextID = nextID // a refused batch takes no numbers
			return nil, fmt.Errorf("recording message %d of %d: %w", i+1, len(msgs), err)
		}
		if m.ContentType == noa.CTToolResult && m.ToolCallID == "" && i > 0 && b.out[i-1].ContentType == noa.CTToolCall {
			m.ToolCallID = b.out[i-1].ToolCallID // the answer to the call before it
		}
		if h.number(&m.CoreMessage) {
			b.reserved = append(b.reserved, m.ToolCallID)
		}
		seen[m.ID] = true
		if h.opts.Redact != nil {
			m.Text = h.opts.Redact(m.Text)
		}
		predicted := ""
		if m.CutToSize {
			// Cut before the message joins the stream, so the stream (and
			// the engine, and the transcript) only ever hold the cut text.
			if cut := h.cutOversize(m.CoreMessage, b.n0, dry); cut != nil {
				m.Text, m.Original, predicted = cut.text, cut.rel, cut.ref
			}
		}
		h.push(m.CoreMessage)
		rec := fromCore(m.CoreMessage)
		rec.IsError, rec.Original = m.IsError, m.Original
		b.out = append(b.out, m)
		b.recs = append(b.recs, record{Kind: kindMessage, Message: rec})
		b.predicted = append(b.predicted, predicted)
	}
	return b, nil
}

// undo takes the batch's messages back off the stream and removes the
// originals it archived.
func (b *batch) undo(h *Host) {
	for _, m := range h.msgs[b.n0:] {
		delete(h.index, m.ID)
	}
	h.msgs, h.total = h.msgs[:b.n0], b.total0
	h.refSeen = min(h.refSeen, b.n0)
	for _, id := range b.reserved {
		delete(h.reserved, id)
	}
	for _, m := range b.out {
		if m.Original != "" && !b.dry {
			_ = h.arch.RemoveResult(m.Original)
		}
	}
}

// commit keeps the batch: its originals become readable, and the ids its
// results took are no longer held for them.
func (b *batch) commit(h *Host) {
	for _, m := range b.out {
		if m.Original != "" {
			h.originals[m.ID] = m.Original
		}
		if m.ContentType == noa.CTToolResult && h.reserved[m.ToolCallID] == m.ID {
			delete(h.reserved, m.ToolCallID)
		}
	}
}

// check validates one message; seen holds the ids earlier in its batch.
func (h *Host) check(m Message, seen map[string]bool) error {
	switch m.Role {
	case noa.RoleSystem, noa.RoleUser, noa.RoleAssistant, noa.RoleTool:
	default:
		return fmt.Errorf("role %q: want %q, %q, %q or %q", m.Role, noa.RoleSystem, noa.RoleUser, noa.RoleAssistant, noa.RoleTool)
	}
	switch m.ContentType {
	case noa.CTText, noa.CTToolCall, noa.CTToolResult, noa.CTReasoning:
	default:
		return fmt.Errorf("content type %q: want %q, %q, %q or %q", m.ContentType, noa.CTText, noa.CTToolCall, noa.CTToolResult, noa.CTReasoning)
	}
	if m.Original != "" {
		//lint:ignore ST1005 Original is the field's name
		return errors.New("Original is set by the host when it cuts a text; leave it empty")
	}
	if m.ID == "" {
		return nil
	}
	if m.ID == noa.NudgeMessageID {
		return fmt.Errorf("id %q is noa's own (its nudge)", m.ID)
	}
	if _, dup := h.index[m.ID]; dup || seen[m.ID] {
		return fmt.Errorf("id %q is already in the session; every message needs an id of its own", m.ID)
	}
	return nil
}

// number gives m the ids it lacks (see Record) and reports whether it
// reserved an id for the result of the call m is.
func (h *Host) number(m *noa.CoreMessage) bool {
	if m.ID != "" {
		return false
	}
	if m.ContentType == noa.CTToolResult {
		if id, ok := h.reserved[m.ToolCallID]; ok {
			if _, taken := h.index[id]; !taken {
				m.ID = id
				return false
			}
		}
	}
	msgID, callID := h.newIDs()
	m.ID = msgID
	if m.ContentType != noa.CTToolCall {
		return false
	}
	if m.ToolCallID == "" {
		m.ToolCallID = callID
	}
	resultID, _ := h.newIDs()
	h.reserved[m.ToolCallID] = resultID
	return true
}

func (h *Host) newIDs() (msgID, callID string) {
	h.nextID++
	return fmt.Sprintf("msg%06d", h.nextID), fmt.Sprintf("call%06d", h.nextID)
}

func (h *Host) push(m noa.CoreMessage) {
	h.index[m.ID] = len(h.msgs)
	h.msgs = append(h.msgs, m)
	h.total += h.count.message(m)
}

// appendRecords writes records to the transcript with one write,
// numbering them, and returns the offset the transcript then reaches; the
// caller makes it durable (durable) before it answers, after releasing
// h.mu when it can, so other calls of the session are not held up by the
// fsync. On a failed write the transcript is cut back to where it was, so
// a half-written batch never stays.
//
// Its error is ErrNotRecorded, and the host's Recording keeps it until an
// append succeeds.
func (h *Host) appendRecords(recs ...record) (int64, error) {
	off, err := h.writeTranscript(recs)
	return off, h.note(err)
}

// writeTranscript is appendRecords but for noting the outcome.
func (h *Host) writeTranscript(recs []record) (int64, error) {
	if h.broken != nil && h.stray {
		if err := h.opts.FS.Truncate(h.path(TranscriptFile), h.trSize); err == nil {
			h.broken, h.stray, h.trAlloc = nil, false, h.trSize
		}
	}
	switch {
	case h.broken != nil && h.stray:
		return 0, fmt.Errorf("writing the transcript: an earlier write failed and could not be cut back (%w); nothing more is recorded until that cut succeeds (each record tries it again) or the session is reopened", h.broken)
	case h.broken != nil:
		return 0, fmt.Errorf("writing the transcript: %w", h.broken)
	}
	if err := h.syncError(); err != nil {
		return 0, fmt.Errorf("writing the transcript: %w; nothing more is recorded until the session is reopened", err)
	}
	if err := h.unpark(); err != nil {
		return 0, fmt.Errorf("writing the transcript: %w", err)
	}
	now := h.opts.Now().UnixMilli()
	for i := range recs {
		recs[i].Seq = h.seq + int64(i) + 1
		recs[i].Time = now
	}
	b, err := encodeRecords(recs)
	if err != nil {
		return 0, err
	}
	err = h.writeRecords(b)
	if err == nil && len(recs) > 0 {
		// With a shared store the batch is recorded once it is there
		// too; one it refused is cut back off the working copy.
		err = h.shareRecords(recs[0].Seq, b)
	}
	if err != nil {
		if terr := h.opts.FS.Truncate(h.path(TranscriptFile), h.trSize); terr != nil {
			h.broken, h.stray = terr, true
			err = errors.Join(err, fmt.Errorf("cutting the transcript back: %w", terr))
		} else {
			h.trAlloc = h.trSize // the reserve went with the cut
		}
		return 0, fmt.Errorf("writing the transcript: %w", err)
	}
	h.trSize += int64(len(b))
	h.seq += int64(len(recs))
	h.written.Store(h.trSize)
	return h.trSize, nil
}

// committed is what a call waits for before it is answered: its records
// on disk up to offset off (durable), or, with Options.FlushEvery, written
// to the transcript already, with the host marked for its pool's next
// periodic flush. A failed flush stops the session either way.
func (h *Host) committed(off int64) error {
	if h.opts.FlushEvery <= 0 || h.pool == nil {
		return h.durable(off)
	}
	if err := h.syncError(); err != nil {
		return err
	}
	h.pool.dirty(h)
	return nil
}

// durable returns once the transcript is on disk up to offset off. It is
// a group commit: the calls of a session that finish while an fsync runs
// wait for it to end, and the first of them then runs one fsync for all
// their records (one fsync covers every byte written before it started).
// It takes h.smu only, never h.mu, so it may be called with h.mu held or
// not. A failed fsync is kept: every later durable and append fails with
// it, since what the kernel dropped cannot be known.
func (h *Host) durable(off int64) error {
	if h.opts.noSync || off <= 0 {
		return nil // nothing written (a turn that recorded nothing)
	}
	h.smu.Lock()
	defer h.smu.Unlock()
	if err := h.syncError(); err != nil {
		return err
	}
	if h.syncedTo >= off || h.tr == nil {
		return nil // nil: parked or closed, after a flush of everything
	}
	upto := h.written.Load()
	if err := h.tr.Sync(); err != nil {
		err = h.note(fmt.Errorf("syncing the transcript: %w", err))
		h.syncErr.Store(&err)
		return err
	}
	h.syncedTo = upto
	return nil
}

// syncError is the fsync failure that stopped the session, if any. It
// takes no lock: appends under h.mu must not wait for an fsync running.
func (h *Host) syncError() error {
	if p := h.syncErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ArgumentsText is how a tool call's JSON arguments are recorded: compact
// JSON, "{}" for none, and the bytes as they came when they are not JSON.
// Bytes compact already (what clients send) are taken as they are, with
// no pass of the JSON scanner over them: json.Compact would return them
// unchanged, or fail and leave them as they came.
func ArgumentsText(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	if !jsonspan.Spaced(args) {
		return string(args)
	}
	var buf bytes.Buffer
	buf.Grow(len(args))
	if err := json.Compact(&buf, args); err != nil {
		return string(args)
	}
	return buf.String()
}
