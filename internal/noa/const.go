package noa

const (
	// RefWidth: refs are m00001..m99999. Fixed-width digits make a plain
	// string sort agree with numeric order.
	RefWidth    = 5
	MinRefIndex = 1
	MaxRefIndex = 99999

	// BlockedRef is stored in ByRaw for a hard-protected message: the entry
	// stops later passes from numbering it, yet it takes no number and the
	// model has nothing to name it by.
	BlockedRef = "BLOCKED"

	// SummaryHeader is the first line of each summary message we render.
	SummaryHeader = "[Compressed conversation section]"

	// SummaryIDPrefix starts the ids of summary messages (see
	// SummaryMessageID).
	SummaryIDPrefix = "noa_summary_"

	// NudgeMessageID is the id of the nudge we add. It is kept out of the
	// ref map, so a range can never start or end on it.
	NudgeMessageID = "noa_nudge"

	// TruncationMarker appears in every tool result that emergency
	// truncation shortened; containing it is how such results are recognised.
	TruncationMarker = "[truncated for context space"

	// ViableRangeMinTokens: ranges smaller than this are not suggested; a
	// summary would save almost nothing.
	ViableRangeMinTokens = 200

	// KeepLastOrphaned: this many of the newest block-less Compress calls
	// stay in view, because the call in flight has no block yet and must
	// not vanish along with the stale ones.
	KeepLastOrphaned = 2

	// SummaryStubChars: once a summary message shows the full text, the
	// copy inside the Compress call's arguments is trimmed to this many
	// characters so the summary is not paid for twice.
	SummaryStubChars = 200

	// ToolPairMaxScan caps the search, in messages, for a tool call's
	// result (or a result's call) when widening a range.
	ToolPairMaxScan = 20

	// DeadRepeatReject: once a range that cannot be compressed has been asked
	// for this many times, further requests for it are refused at once.
	DeadRepeatReject = 2
)

// CompressToolName is the compression tool's name; use this constant
// everywhere so prompts, protection and parsing cannot disagree.
const CompressToolName = "Compress"

// DefaultRecallTool is the host tool a cut names for reading back what was
// cut (internal/session's read_archive), unless Truncate.RecallTool says
// otherwise.
const DefaultRecallTool = "read_archive"

// NoRangesMessage answers a Compress call that listed no ranges. Such a call
// is not an attempt at all: it neither resets nor feeds MaxCompressAttempts.
const NoRangesMessage = "No ranges provided."

// SystemPromptHeader opens the resident prompt block; nudges refer to it by
// name.
const SystemPromptHeader = "noa context management"

// AlwaysProtectedTools are protected even if the config says otherwise.
var AlwaysProtectedTools = []string{CompressToolName}

// NeverPreserveRecentTools are left out of the recent-message protection:
// what they return is large and cheap to get again, so keeping it costs more
// than it saves.
var NeverPreserveRecentTools = []string{"Read", "Grep", "Glob", "Bash", "LS"}
