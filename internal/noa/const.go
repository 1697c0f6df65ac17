package noa

const (
	// RefWidth is the zero-padded width of a message ref (m00001..m99999);
	// padding keeps lexicographic order equal to numeric order.
	RefWidth    = 5
	MinRefIndex = 1
	MaxRefIndex = 99999

	// BlockedRef marks a hard-protected message: recorded in ByRaw so it is
	// not revisited, but it consumes no ref number and cannot be addressed.
	BlockedRef = "BLOCKED"

	// SummaryHeader opens every rendered summary message.
	SummaryHeader = "[Compressed conversation section]"

	// SummaryIDPrefix + blockID is the synthetic id of a rendered summary.
	SummaryIDPrefix = "noa_summary_"

	// NudgeMessageID is the synthetic id of the injected nudge. It never
	// enters the ref map.
	NudgeMessageID = "noa_nudge"

	// TruncationMarker identifies an emergency-truncated tool result;
	// detection is a substring test.
	TruncationMarker = "[truncated for context space"

	// ViableRangeMinTokens filters fragments out of the recommendation.
	ViableRangeMinTokens = 200

	// KeepLastOrphaned is how many trailing Compress calls without a block
	// stay visible.
	KeepLastOrphaned = 2

	// SummaryStubChars is the length a Compress call's summary argument is
	// cut down to once a rendered summary message carries the full text.
	SummaryStubChars = 200

	// ToolPairMaxScan bounds how far boundary adjustment looks for the other
	// half of a tool exchange.
	ToolPairMaxScan = 20

	// DeadRepeatReject is how many times the same dead range may be
	// requested before it is rejected outright.
	DeadRepeatReject = 2
)

// CompressToolName is the single source of truth for the tool's name.
const CompressToolName = "Compress"

// NoRangesMessage is the neutral answer to a Compress call with nothing to
// do: neither a success nor a failure.
const NoRangesMessage = "No ranges provided."

// SystemPromptHeader opens the resident prompt block; nudges refer to it by
// name.
const SystemPromptHeader = "noa context management"

// AlwaysProtectedTools can never be compressed, whatever the configuration.
var AlwaysProtectedTools = []string{CompressToolName}

// NeverPreserveRecentTools do not occupy a slot in the recent protected zone:
// their output is bulky and can be fetched again. They stay compressible.
var NeverPreserveRecentTools = []string{"Read", "Grep", "Glob", "Bash", "LS"}
