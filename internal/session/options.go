package session

import (
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Defaults.
const (
	DefaultContextLimit    = 200000
	DefaultMaxResultTokens = 25000
	// DefaultStateEvery is how many turns may pass between two writes of
	// state.json. The transcript is written (and fsync'd) on every record
	// and is the source of truth; state.json is a checkpoint Open verifies
	// and, when it is behind, brings forward from the transcript. Each
	// write costs an O(messages) encoding and two fsyncs, which share the
	// disk with the calls' own: one in 64 turns keeps that a small share of
	// a small call (issue 13).
	DefaultStateEvery = 64
)

// ReadArchiveToolName is the name of the tool that returns archived
// originals (see Host.ReadArchive).
const ReadArchiveToolName = "read_archive"

// ReadResultToolName is the name the same tool takes with
// Options.RecallOnly, when it returns only the originals of results cut for
// size: the gateway offers the model a read_archive of its own, whose refs
// are the gateway conversation's, so the MCP side's must not share its name.
const ReadResultToolName = "read_result"

// ReadResultDescription is what the model reads next to read_result.
const ReadResultDescription = "Return the original of a tool result cut for size, verbatim (ref: as the cut result names it). " +
	"Long ones come in pages; each names the call for the next."

// Options configure hosts. The zero value is usable except for Dir.
type Options struct {
	// Dir is the sessions directory, <data_dir>/sessions. Required.
	Dir string
	// Noa is the engine's configuration; a zero ModelContextLimit means
	// noa.DefaultConfig(DefaultContextLimit). Emergency truncation is
	// switched off whatever it says: over MCP the view noa projects is never
	// sent anywhere (the client keeps its own copy), so a cut there would
	// only make the nudge claim something that did not happen. A host
	// opened with HostOptions.Noa uses that configuration as given.
	Noa noa.Config
	// MaxResultTokens is the largest text a message recorded with
	// Message.CutToSize keeps whole; larger ones are cut head-and-tail.
	// Zero means DefaultMaxResultTokens.
	MaxResultTokens int
	// Count measures tokens (tokens.Counter.Count); nil means
	// noa.DefaultCountTokens. Either way an OpaqueText placeholder counts
	// as the tokens it names (CountOpaque).
	Count noa.TokenCountFn
	// Tokenizer names the encoding Count implements ("cl100k_base"), ""
	// when it is not a named one. A new session saves it (SessionFile), and
	// a session that saved another is counted with that one instead.
	Tokenizer string
	// countsOpaque is set once Count is wrapped by CountOpaque
	// (withDefaults), so it is wrapped once.
	countsOpaque bool
	// CountSplitsAtLines says Count is additive at line starts (see
	// lineStart), as tokens.Counter's encodings are: an oversize text is
	// then cut from one count of the pieces it keeps. False (for counts
	// that are not, such as noa.DefaultCountTokens) counts the cut whole.
	CountSplitsAtLines bool
	// StateEvery is how many turns may pass between writes of state.json;
	// zero means DefaultStateEvery, 1 writes it on every turn. Compress
	// calls always write it. In a session of n messages the periodic
	// writes come at most every n/256 turns (their cost grows with n). A
	// Manager's hosts write them off the call path (checkpoint.go):
	// shortly after the turn that is due, not before it returns.
	StateEvery int
	// FS performs every disk write; nil means OS.
	FS FS
	// Logger receives warnings (nil = no-op).
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// RecallOnly marks hosts whose front keeps only size cuts and recall
	// (config noa.mcp "recall"): a cut result points to ReadResultToolName
	// instead of ReadArchiveToolName. The front offers no Compress then.
	RecallOnly bool
	// RefuseUnrecorded marks hosts whose front refuses a call its session
	// cannot record (config noa.on_record_error "refuse"); false, the
	// default, runs it and says in its answer that it was not recorded.
	// The hosts record the same either way; it is the front's policy.
	RefuseUnrecorded bool
	// Redact, when set, masks secrets in every message's text before the
	// message joins the stream, so the transcript, the archives and noa's
	// view only ever hold the masked text (issue 16). The MCP front still
	// returns a tool's result as it came; a result cut to size comes back
	// as its masked head and tail. nil = recorded verbatim.
	Redact func(string) string
	// Retention, when positive, makes a Manager remove the sessions nothing
	// has touched for that long, when it starts and every
	// RetentionInterval (see Prune); zero keeps every session.
	Retention time.Duration
	// OnPrune, when set, receives the report of each prune a Manager's
	// retention runs, after the sessions in it are removed (the gateway
	// forgets the conversations whose sessions are gone). nil = nothing.
	OnPrune func(PruneReport)
	// MaxOpen is how many of a Manager's hosts keep their files open at
	// once (pool.go); zero means DefaultMaxOpen.
	MaxOpen int
	// FlushEvery, when positive, lets a call be answered once its records
	// are written to the transcript (handed to the operating system, so
	// they survive mcproxy crashing), and flushes them to disk at most
	// FlushEvery later (noa.fsync "every_second"). Zero flushes them before
	// the answer. Compress, state.json, parking and Close always flush
	// first. Only a Manager's hosts flush late (its pool runs the timer).
	FlushEvery time.Duration

	// Store, when set, is where the sessions are kept for every replica
	// (see Store); Dir then holds this replica's working copies. nil keeps
	// them in Dir alone.
	Store Store

	// hook, in tests, is called at named points of a Compress call
	// ("archived": archives written, nothing recorded; "logged": transcript
	// written, state.json not).
	hook func(stage string)
	// noSync skips fsync (benchmark set-up only).
	noSync bool
	// pruneEvery, in tests, replaces RetentionInterval.
	pruneEvery time.Duration
	// verify checks every turn against noa.ProcessTurn (tests only; see
	// verifier).
	verify bool
}

// RecallTool is the tool a cut result points to for its original.
func (o Options) RecallTool() string {
	if o.RecallOnly {
		return ReadResultToolName
	}
	return ReadArchiveToolName
}

func (o Options) withDefaults() Options {
	if o.Noa.ModelContextLimit <= 0 {
		o.Noa = noa.DefaultConfig(DefaultContextLimit)
	}
	o.Noa.Truncate.Threshold = 0
	if o.MaxResultTokens <= 0 {
		o.MaxResultTokens = DefaultMaxResultTokens
	}
	if !o.countsOpaque {
		o.Count, o.countsOpaque = CountOpaque(o.Count), true
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
