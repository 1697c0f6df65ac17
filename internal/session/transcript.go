package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// File names inside a session directory.
const (
	TranscriptFile = "transcript.jsonl"
	StateFile      = "state.json"
	ArchiveDir     = "archive"
)

// Record kinds.
const (
	// kindMessage is a message of the stream.
	kindMessage = "message"
	// kindTurn is a turn that recorded no message but moved noa's pacing
	// (a Turn with nothing new, as a model request that only re-reads the
	// session makes); it carries only the pacing.
	kindTurn = "turn"
	// kindEngage marks the point from which the front adds noa's tools
	// and text to the model's requests (Host.Engage); it carries nothing.
	kindEngage = "engage"
)

// record is one line of transcript.jsonl. Every message of the stream is a
// record; the last record a turn writes (over MCP: the tool result's; after
// a Compress call: its panel's) carries the pacing noa held after that
// turn, and a Compress call's panel record carries the call's metadata, so
// the whole state can be rebuilt from the transcript alone.
type record struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	// Time is when the record was written, in Unix milliseconds.
	Time     int64           `json:"time"`
	Message  *message        `json:"message,omitempty"`
	Pacing   *pacing         `json:"pacing,omitempty"`
	Compress *compressRecord `json:"compress,omitempty"`
}

// message is a noa.CoreMessage as recorded.
type message struct {
	ID     string `json:"id"`
	Role   string `json:"role"`
	Type   string `json:"type"`
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Text   string `json:"text"`
	// Original is set on a result returned cut to size: the path, relative
	// to archive/, of its full original text.
	Original string `json:"original,omitempty"`
	IsError  bool   `json:"is_error,omitempty"`
}

func (m message) core() noa.CoreMessage {
	return noa.CoreMessage{ID: m.ID, Role: noa.Role(m.Role), ContentType: noa.ContentType(m.Type), Text: m.Text, ToolName: m.Tool, ToolCallID: m.CallID}
}

func fromCore(c noa.CoreMessage) *message {
	return &message{ID: c.ID, Role: string(c.Role), Type: string(c.ContentType), Tool: c.ToolName, CallID: c.ToolCallID, Text: c.Text}
}

// pacing is the part of noa's state that the conversation does not
// determine: nudge bookkeeping and failure counters. It is recorded after
// every turn so a rebuild restores it exactly.
type pacing struct {
	Nudge               noa.NudgeState `json:"nudge"`
	ConsecutiveFailures int            `json:"consecutive_failures,omitempty"`
	SuppressedAtTokens  int            `json:"suppressed_at_tokens,omitempty"`
	DeadRanges          map[string]int `json:"dead_ranges,omitempty"`
	// Tokens is the measured size of the session's view that turn and
	// Nudged whether a nudge went out; both are for people reading the
	// transcript, not for the rebuild.
	Tokens int  `json:"tokens,omitempty"`
	Nudged bool `json:"nudged,omitempty"`
}

func pacingOf(st noa.CompressionState) *pacing {
	// Copy through noa's own cloner so the record never aliases live maps.
	c := noa.CloneState(noa.CompressionState{Nudge: st.Nudge, Stats: noa.Stats{DeadRanges: st.Stats.DeadRanges}})
	p := &pacing{
		Nudge:               c.Nudge,
		ConsecutiveFailures: st.Stats.ConsecutiveFailures,
		SuppressedAtTokens:  st.Stats.SuppressedAtTokens,
	}
	if len(c.Stats.DeadRanges) > 0 {
		p.DeadRanges = c.Stats.DeadRanges
	}
	return p
}

// samePacing reports whether two pacings restore the same state (the
// figures kept for readers aside).
func samePacing(a, b *pacing) bool {
	x, y := *a, *b
	x.Tokens, x.Nudged, y.Tokens, y.Nudged = 0, false, 0, false
	jx, errx := json.Marshal(x)
	jy, erry := json.Marshal(y)
	return errx == nil && erry == nil && bytes.Equal(jx, jy)
}

// apply writes the pacing into st (which the caller owns).
func (p *pacing) apply(st *noa.CompressionState) {
	c := noa.CloneState(noa.CompressionState{Nudge: p.Nudge, Stats: noa.Stats{DeadRanges: p.DeadRanges}})
	st.Nudge = c.Nudge
	st.Stats.DeadRanges = c.Stats.DeadRanges
	st.Stats.ConsecutiveFailures = p.ConsecutiveFailures
	st.Stats.SuppressedAtTokens = p.SuppressedAtTokens
}

// compressRecord describes one Compress call.
type compressRecord struct {
	CallID string `json:"call_id"`
	// CreatedAt and Now are the instant handed to noa.ApplyCompression.
	CreatedAt string `json:"created_at"`
	Now       int64  `json:"now"`
	// Blocks are the ids of the blocks created; Archives their archive
	// paths relative to archive/. Errors counts the corrective messages.
	Blocks   []string `json:"blocks,omitempty"`
	Archives []string `json:"archives,omitempty"`
	Errors   int      `json:"errors,omitempty"`
}

// transcript is what reading transcript.jsonl yields.
type transcript struct {
	records []record
	// valid is the length of the file up to the last complete record;
	// torn is set when bytes after it (a record cut short by a crash) were
	// ignored; reserve when zeros follow it (trfile.go).
	valid   int64
	torn    bool
	reserve bool
}

// readTranscript reads a transcript. A missing file is an empty transcript.
// A last line without its newline is a write cut short by a crash: it is
// ignored and reported. The records end at the first line holding a NUL
// byte, the start of the reserve (trfile.go); any other byte from there on
// was a write that never became durable, reported the same way. A
// malformed complete line is corruption: an error naming the line.
// messages counts the distinct messages t records.
func (t transcript) messages() int {
	ids := map[string]bool{}
	for _, r := range t.records {
		if r.Kind == kindMessage && r.Message != nil {
			ids[r.Message.ID] = true
		}
	}
	return len(ids)
}

func readTranscript(path string) (transcript, error) {
	var t transcript
	f, err := os.Open(path)
	if notExist(err) {
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("opening transcript: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	line := 0
	for {
		b, err := r.ReadBytes('\n')
		if bytes.IndexByte(b, 0) >= 0 {
			// The reserve, perhaps partly written over by records that
			// never became durable: the records end here.
			t.reserve = true
			t.torn, err = nonZeroRest(b, r)
			if err != nil {
				return t, fmt.Errorf("reading transcript %s: %w", path, err)
			}
			return t, nil
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line++
			var rec record
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if derr := dec.Decode(&rec); derr != nil {
				return t, fmt.Errorf("transcript %s line %d: %w", path, line, derr)
			}
			t.records = append(t.records, rec)
			t.valid += int64(len(b))
		} else if len(b) > 0 {
			t.torn = true
		}
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return t, fmt.Errorf("reading transcript %s: %w", path, err)
		}
	}
}

// nonZeroRest reports whether b or anything left in r holds a byte other
// than NUL.
func nonZeroRest(b []byte, r io.Reader) (bool, error) {
	buf := make([]byte, 32<<10)
	for {
		if len(bytes.TrimLeft(b, "\x00")) > 0 {
			return true, nil
		}
		n, err := r.Read(buf)
		b = buf[:n]
		if errors.Is(err, io.EOF) {
			return len(bytes.TrimLeft(b, "\x00")) > 0, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// encodeRecords renders records as JSON lines.
func encodeRecords(recs []record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return nil, fmt.Errorf("encoding transcript record %d: %w", recs[i].Seq, err)
		}
	}
	return buf.Bytes(), nil
}
