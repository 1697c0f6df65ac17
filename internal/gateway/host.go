package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Hosts opens the noa host of a conversation. The gateway calls Host on
// every model request of the conversation; keeping hosts open, evicting
// idle ones and persisting them is the implementation's business
// (internal/session for mcproxy serve; MemoryHosts in tests).
type Hosts interface {
	// Host opens or restores the conversation id (a valid session id:
	// 1-128 of [A-Za-z0-9_.-], not starting with a dot), paced against a
	// model window of contextLimit tokens.
	Host(ctx context.Context, id string, contextLimit int) (Host, error)
	// Peek returns the Turn that conversation id would give if the messages
	// of pending it does not hold (by id) were recorded after its own,
	// paced as Host(ctx, id, contextLimit) would pace it. It records,
	// changes and creates nothing: an id it does not hold (or "") is
	// projected as a new, empty conversation. count_tokens answers with it.
	Peek(ctx context.Context, id string, contextLimit int, pending []noa.CoreMessage) (Turn, error)
	// Tools are the definitions of the tools noa gives the model: Compress
	// and read_archive.
	Tools() []ToolDef
}

// Host is one conversation's noa host: the message stream, noa's state and
// the archives. Its methods are safe for concurrent use.
type Host interface {
	// Messages returns the recorded stream, oldest first.
	Messages() []noa.CoreMessage
	// Has reports whether the message id is recorded. The gateway asks it
	// before recording, so a request whose messages were recorded but whose
	// conversation index was not (a crash between the two) records nothing
	// twice.
	Has(id string) bool
	// Record appends messages to the stream.
	Record(ctx context.Context, msgs ...noa.CoreMessage) error
	// Turn runs noa over the stream and returns what the model should read.
	Turn(ctx context.Context) (Turn, error)
	// Compress applies the model's Compress call (ContentType tool-call,
	// ToolName noa.CompressToolName, Text its JSON arguments): archives
	// first, then the call and its result are recorded, in that order. The
	// result message is returned; its text is the panel the model reads, and
	// an error meant for the model is a result, not a Go error.
	Compress(ctx context.Context, call noa.CoreMessage) (noa.CoreMessage, error)
	// ReadArchive answers the model's read_archive call the same way:
	// records the call and its result (the archived original, paged) and
	// returns the result.
	ReadArchive(ctx context.Context, call noa.CoreMessage) (noa.CoreMessage, error)
	// Engage marks the conversation engaged for the rest of its life
	// (across restarts, for a host that persists): from then on its Turns
	// report Engaged and the gateway adds noa's tools, text and tags to
	// its requests (engage.go). Engaging an engaged conversation does
	// nothing.
	Engage(ctx context.Context) error
}

// Turn is noa's projection of a conversation for one model request.
type Turn struct {
	// View is the stream as the model should read it: covered spans
	// replaced by their summaries (ids with noa.SummaryIDPrefix), Compress
	// exchanges stubbed or hidden. It never holds the nudge.
	View []noa.CoreMessage
	// Nudge is the rendered request to compress; "" when there is none.
	Nudge string
	// Refs maps a message id to the ref the model names it by and the
	// token count frozen in its tag.
	Refs map[string]Ref
	// SystemPrompt is noa's resident prompt, added to the request's system
	// prompt; "" adds nothing.
	SystemPrompt string
	// Tokens is the size of the recorded stream, Projected that of View;
	// Limit the window they are paced against.
	Tokens, Projected, Limit int
	// Engaged reports whether the conversation was engaged (Host.Engage)
	// when the turn was taken. A conversation that is not is forwarded as
	// the client sent it.
	Engaged bool
	// Engaging reports that this turn engaged the conversation: the first
	// compression of it is due (firstround.go).
	Engaging bool
	// Ranges are noa's recommended compressible ranges this turn, largest
	// spans first as noa lists them; empty when it recommends none.
	Ranges []noa.RangeInfo
}

// Ref is a message's ref and the token count its tag shows.
type Ref struct {
	Ref    string
	Tokens int
}

// ToolDef is a tool the gateway adds to a request.
type ToolDef struct {
	Name        string
	Description string
	Schema      json.RawMessage
}
