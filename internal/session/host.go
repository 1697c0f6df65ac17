package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Defaults.
const (
	DefaultContextLimit    = 200000
	DefaultMaxResultTokens = 25000
	// DefaultStateEvery is how many tool calls may pass between two writes
	// of state.json. The transcript is written (and fsync'd) on every call
	// and is the source of truth; state.json is a checkpoint Open verifies
	// and, when it is behind, brings forward from the transcript.
	DefaultStateEvery = 16
)

// ReadArchiveToolName is the name of the tool that returns archived
// originals.
const ReadArchiveToolName = "read_archive"

// Options configure hosts. The zero value is usable except for Dir.
type Options struct {
	// Dir is the sessions directory, <data_dir>/sessions. Required.
	Dir string
	// Noa is the engine's configuration; a zero ModelContextLimit means
	// noa.DefaultConfig(DefaultContextLimit). Emergency truncation is
	// switched off whatever it says: over MCP the view noa projects is never
	// sent anywhere (the client keeps its own copy), so a cut there would
	// only make the nudge claim something that did not happen.
	Noa noa.Config
	// MaxResultTokens is the largest result returned whole; larger ones come
	// back head-and-tail. Zero means DefaultMaxResultTokens.
	MaxResultTokens int
	// Count measures tokens (tokens.Counter.Count); nil means
	// noa.DefaultCountTokens.
	Count noa.TokenCountFn
	// StateEvery is how many tool calls may pass between writes of
	// state.json; zero means DefaultStateEvery, 1 writes it on every call.
	// Compress calls always write it.
	StateEvery int
	// FS performs the disk I/O; nil means OS.
	FS FS
	// Logger receives warnings (nil = no-op).
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// hook, in tests, is called at named points of a Compress call
	// ("archived": archives written, nothing recorded; "logged": transcript
	// written, state.json not).
	hook func(stage string)
	// noSync skips fsync (benchmark set-up only).
	noSync bool
}

func (o Options) withDefaults() Options {
	if o.Noa.ModelContextLimit <= 0 {
		o.Noa = noa.DefaultConfig(DefaultContextLimit)
	}
	o.Noa.Truncate.Threshold = 0
	if o.MaxResultTokens <= 0 {
		o.MaxResultTokens = DefaultMaxResultTokens
	}
	if o.Count == nil {
		o.Count = noa.DefaultCountTokens
	}
	if o.StateEvery <= 0 {
		o.StateEvery = DefaultStateEvery
	}
	if o.FS == nil {
		o.FS = OS{}
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

var validID = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$`)

// ValidSessionID reports whether id can name a session directory: 1 to 128
// of [A-Za-z0-9_.-], not starting with a dot.
func ValidSessionID(id string) bool { return validID.MatchString(id) }

// Host is one MCP session's noa host. Its methods are safe for concurrent
// use; tool calls run concurrently, their recording is serialised.
type Host struct {
	id, dir string
	opts    Options
	cfg     noa.Config
	arch    *Archiver
	count   *memo
	log     *zap.Logger

	mu        sync.Mutex
	msgs      []noa.CoreMessage
	index     map[string]int    // message id -> position in msgs
	originals map[string]string // message id -> archived full result
	st        noa.CompressionState
	seq       int64 // last record written
	stateSeq  int64 // record state.json reflects
	nextID    int   // message and call numbering
	tr        File
	lock      *dirLock // held from Open to Close
	trSize    int64
	unsaved   int // tool calls since state.json was written
	report    Report
	closed    bool
}

// Report is what Open found and repaired.
type Report struct {
	// Records is how many transcript records were read.
	Records int
	// TornTail is set when a record cut short by a crash was dropped from
	// the end of the transcript.
	TornTail bool
	// StateMissing, StateBehind and StateMismatch describe state.json:
	// absent, older than the transcript, or different from what the
	// transcript rebuilds at the same point. In every case the state is
	// taken from the transcript and state.json is rewritten.
	StateMissing, StateBehind, StateMismatch bool
	// Replayed and Skipped count Compress calls replayed from the
	// transcript and recorded calls that had created nothing.
	Replayed, Skipped int
	// OrphanArchives are archive files no block points at (left by a
	// Compress interrupted before it was recorded).
	OrphanArchives []string
	// MissingArchives are archives of recorded blocks that are not on disk.
	MissingArchives []string
	Warnings        []string
}

// Open opens the session id under opts.Dir, creating it when it does not
// exist. An existing session is rebuilt from its transcript; the result is
// checked against state.json and state.json is repaired when it is missing,
// behind, or different. The returned host must be closed.
//
// The host holds the session's lock (see LockFile) until Close: while it is
// open, another Open or Rebuild of the same session, in this process or
// another, fails with an *InUseError.
func Open(opts Options, id string) (*Host, error) {
	if opts.Dir == "" {
		return nil, errors.New("opening session: no sessions directory configured")
	}
	if !ValidSessionID(id) {
		return nil, fmt.Errorf("opening session: invalid session id %q (want 1-128 of A-Z a-z 0-9 _ . -, not starting with a dot)", id)
	}
	opts = opts.withDefaults()
	dir := filepath.Join(opts.Dir, id)
	h := &Host{
		id: id, dir: dir, opts: opts, cfg: opts.Noa,
		arch:      &Archiver{Root: filepath.Join(dir, ArchiveDir), FS: opts.FS},
		count:     newMemo(opts.Count),
		log:       opts.Logger.With(zap.String("session_id", id)),
		index:     map[string]int{},
		originals: map[string]string{},
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
	if err := h.load(); err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	tr, err := opts.FS.OpenAppend(filepath.Join(dir, TranscriptFile))
	if err != nil {
		_ = lock.release()
		return nil, fmt.Errorf("opening session %s: %w", id, err)
	}
	h.tr, h.lock = tr, lock
	for _, w := range h.report.Warnings {
		h.log.Warn("session restored with a repair", zap.String("detail", w))
	}
	return h, nil
}

// load restores the session from disk (nothing to do for a new one).
func (h *Host) load() error {
	trPath := filepath.Join(h.dir, TranscriptFile)
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
		if err := os.Truncate(trPath, t.valid); err != nil {
			return fmt.Errorf("dropping the torn last record: %w", err)
		}
	}
	h.trSize = t.valid
	saved, haveState, err := readState(filepath.Join(h.dir, StateFile))
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		haveState = false
	}
	if len(t.records) == 0 {
		h.st = noa.CreateInitialState(h.id, h.arch.Root)
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
	h.msgs, h.originals, h.st, h.seq = full.msgs, full.originals, full.state, full.seq
	for i, m := range h.msgs {
		h.index[m.ID] = i
	}
	h.nextID = highestID(h.msgs)
	rep.OrphanArchives = orphanArchives(h.arch.Root, h.st)
	if rep.StateMissing || rep.StateBehind || rep.StateMismatch {
		if err := h.saveState(); err != nil {
			return err
		}
	} else {
		h.stateSeq = saved.Seq
	}
	return nil
}

// ID is the session id.
func (h *Host) ID() string { return h.id }

// Dir is the session directory.
func (h *Host) Dir() string { return h.dir }

// Report is what Open found and repaired.
func (h *Host) Report() Report { return h.report }

// State returns a copy of the current noa state.
func (h *Host) State() noa.CompressionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return noa.CloneState(h.st)
}

// Messages returns a copy of the recorded message stream.
func (h *Host) Messages() []noa.CoreMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]noa.CoreMessage(nil), h.msgs...)
}

// Close writes state.json if it is behind, closes the transcript and
// releases the session's lock.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	if h.stateSeq != h.seq {
		errs = append(errs, h.saveState())
	}
	errs = append(errs, h.tr.Close())
	errs = append(errs, h.lock.release()) // last: every write is done
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing session %s: %w", h.id, err)
	}
	return nil
}

// ErrClosed is returned by a Host used after Close.
var ErrClosed = errors.New("session is closed")

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

func (h *Host) newIDs() (msgID, callID string) {
	h.nextID++
	return fmt.Sprintf("msg%06d", h.nextID), fmt.Sprintf("call%06d", h.nextID)
}

// appendRecords writes records to the transcript with one write and one
// fsync, numbering them. On failure the transcript is cut back to where it
// was, so a half-written batch never stays.
func (h *Host) appendRecords(recs ...record) error {
	now := h.opts.Now().UnixMilli()
	for i := range recs {
		recs[i].Seq = h.seq + int64(i) + 1
		recs[i].Time = now
	}
	b, err := encodeRecords(recs)
	if err != nil {
		return err
	}
	_, err = h.tr.Write(b)
	if err == nil && !h.opts.noSync {
		err = h.tr.Sync()
	}
	if err != nil {
		if terr := os.Truncate(filepath.Join(h.dir, TranscriptFile), h.trSize); terr != nil {
			err = errors.Join(err, fmt.Errorf("cutting the transcript back: %w", terr))
		}
		return fmt.Errorf("writing the transcript: %w", err)
	}
	h.trSize += int64(len(b))
	h.seq += int64(len(recs))
	return nil
}

// saveState writes state.json atomically.
func (h *Host) saveState() error {
	b, err := encodeState(h.seq, h.st)
	if err != nil {
		return err
	}
	if _, err := writeAtomic(h.opts.FS, filepath.Join(h.dir, StateFile), b); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	h.stateSeq = h.seq
	h.unsaved = 0
	return nil
}

// synced returns st with refs and token snapshots brought up to date with
// msgs, exactly as noa's own turn does, and nothing else changed: a
// ProcessTurn with no context limit runs only its sizing stages.
func (h *Host) synced(msgs []noa.CoreMessage, st noa.CompressionState) noa.CompressionState {
	cfg := h.cfg
	cfg.ModelContextLimit = 0
	r := noa.ProcessTurn(noa.ProcessTurnInput{Messages: msgs, State: st, Config: cfg, TokenCount: 1, CountTokens: h.count.count})
	out := noa.CloneState(st)
	out.MessageRefs, out.TokenSnapshot = r.State.MessageRefs, r.State.TokenSnapshot
	return out
}

// Call records a tools/call named tool with arguments args, runs it, records
// what it returned, runs noa over the session, and returns the result shaped
// for the client: the upstream's content untouched, then a ref tag, then the
// nudge when noa asks for one; a result above MaxResultTokens comes back
// head-and-tail with a pointer to its archived original. A Go error from run
// is recorded and returned unchanged. The result run returns is never
// modified.
//
// If the transcript cannot be written the call still runs and its result is
// returned as it came (logged): losing the record must not break the tool.
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	pending, err := h.recordCall(tool, args)
	if err != nil {
		h.log.Error("recording a tool call; returning its result unrecorded", zap.String("tool", tool), zap.Error(err))
		return run(ctx)
	}
	res, runErr := run(ctx)
	shaped, err := h.recordResult(pending, res, runErr)
	if err != nil {
		h.log.Error("recording a tool result; returning it unrecorded", zap.String("tool", tool), zap.Error(err))
		return res, runErr
	}
	if runErr != nil {
		return res, runErr
	}
	return shaped, nil
}

// pendingCall is a recorded call awaiting its result.
type pendingCall struct {
	tool, callID, resultID string
}

func (h *Host) recordCall(tool string, args json.RawMessage) (pendingCall, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return pendingCall{}, ErrClosed
	}
	msgID, callID := h.newIDs()
	m := noa.CoreMessage{ID: msgID, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: tool, ToolCallID: callID, Text: argsText(args)}
	if err := h.appendRecords(record{Kind: kindMessage, Message: fromCore(m)}); err != nil {
		return pendingCall{}, err
	}
	h.push(m)
	resultID, _ := h.newIDs()
	return pendingCall{tool: tool, callID: callID, resultID: resultID}, nil
}

func (h *Host) push(m noa.CoreMessage) {
	h.index[m.ID] = len(h.msgs)
	h.msgs = append(h.msgs, m)
}

// argsText is the recorded text of a call's arguments: compact JSON.
func argsText(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	var b strings.Builder
	if err := compactJSON(&b, args); err != nil {
		return string(args)
	}
	return b.String()
}

func (h *Host) recordResult(p pendingCall, res *mcp.CallToolResult, runErr error) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	m := noa.CoreMessage{ID: p.resultID, Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: p.tool, ToolCallID: p.callID}
	isError := true
	var cut *cutResult
	if runErr != nil {
		m.Text = "[error] " + runErr.Error()
	} else {
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		m.Text = ResultText(res)
		isError = res.IsError
		if p.tool != ReadArchiveToolName {
			cut = h.cutOversize(&m)
		}
	}
	h.push(m)
	r := noa.ProcessTurn(noa.ProcessTurnInput{Messages: h.msgs, State: h.st, Config: h.cfg, CountTokens: h.count.count})
	pc := pacingOf(r.State)
	var nudge string
	for _, vm := range r.Messages {
		if vm.ID != noa.NudgeMessageID {
			pc.Tokens += h.count.message(vm)
		} else {
			nudge = vm.Text
		}
	}
	pc.Nudged = r.Nudge != nil
	rec := fromCore(m)
	rec.IsError = isError
	if cut != nil {
		rec.Original = cut.rel
	}
	if err := h.appendRecords(record{Kind: kindMessage, Message: rec, Pacing: pc}); err != nil {
		h.msgs = h.msgs[:len(h.msgs)-1]
		delete(h.index, m.ID)
		return nil, err
	}
	h.st = r.State
	if cut != nil {
		h.originals[m.ID] = cut.rel
	}
	h.unsaved++
	if h.unsaved >= h.opts.StateEvery {
		if err := h.saveState(); err != nil {
			// The transcript holds the turn; Open will bring state.json
			// forward. Not worth failing the call over.
			h.log.Warn("writing state.json", zap.Error(err))
		}
	}
	if runErr != nil {
		return nil, nil
	}
	ref, ok := noa.RefForRaw(h.st.MessageRefs, m.ID)
	if cut != nil && cut.ref != ref {
		h.log.Error("a cut result's pointer names a different ref than it was given", zap.String("pointer", cut.ref), zap.String("ref", ref))
	}
	return shape(res, cut, ok, ref, h.st.TokenSnapshot[ref], nudge), nil
}

// shape builds what the client receives; res is not modified.
func shape(res *mcp.CallToolResult, cut *cutResult, hasRef bool, ref string, tokens int, nudge string) *mcp.CallToolResult {
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+3)
	if cut != nil {
		out.Content = append(out.Content, mcp.NewTextContent(cut.text))
		for _, c := range res.Content {
			if !isText(c) {
				out.Content = append(out.Content, c)
			}
		}
		// The structured copy would carry the whole payload again.
		out.StructuredContent = nil
		out.RawStructuredContent = nil
	} else {
		out.Content = append(out.Content, res.Content...)
	}
	if hasRef {
		out.Content = append(out.Content, mcp.NewTextContent(noa.FormatRefTag(ref, tokens)))
	}
	if nudge != "" {
		out.Content = append(out.Content, mcp.NewTextContent(nudge))
	}
	return &out
}

// memo caches token counts by text: noa measures every message of the view
// on every turn, and a real BPE tokenizer is far too slow to run over the
// whole session each time.
type memo struct {
	fn noa.TokenCountFn
	mu sync.Mutex
	m  map[string]int
}

func newMemo(fn noa.TokenCountFn) *memo {
	if fn == nil {
		fn = noa.DefaultCountTokens
	}
	return &memo{fn: fn, m: map[string]int{}}
}

// memoLimit bounds the cache; when it is exceeded the cache starts over.
const memoLimit = 1 << 17

func (c *memo) count(text string) int {
	c.mu.Lock()
	n, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.fn(text)
	c.mu.Lock()
	if len(c.m) >= memoLimit {
		c.m = map[string]int{}
	}
	c.m[text] = n
	c.mu.Unlock()
	return n
}

func (c *memo) message(m noa.CoreMessage) int { return noa.CountMessageTokens(m, c.count) }
