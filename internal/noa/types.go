package noa

import "maps"

// Role is the author of a CoreMessage.
type Role string

// Roles a host projects its messages into.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ContentType says what a CoreMessage holds. Hosts split a message with
// several content parts into one CoreMessage per part (possibly none), so
// each part can be addressed and compressed on its own.
type ContentType string

// Content types.
const (
	CTText       ContentType = "text"
	CTToolCall   ContentType = "tool-call"
	CTToolResult ContentType = "tool-result"
	CTReasoning  ContentType = "reasoning"
)

// CoreMessage is the flattened representation the pipeline works on. Text is
// the bare body without any ref tag, so the tag never feeds message identity.
type CoreMessage struct {
	ID          string
	Role        Role
	ContentType ContentType
	Text        string
	ToolName    string
	ToolCallID  string
}

// Tier is how many rounds of merging a block represents, from 1 up to
// Config.Tiers.MaxTier. It never changes after the block is made.
type Tier int

// TokenCountFn estimates the token cost of a text.
type TokenCountFn func(text string) int

// MessageRefMap translates host message ids to the short mNNNNN refs shown
// to the model and back. Refs are permanent: reusing one would make an old
// ref in the model's memory point at a different message.
type MessageRefMap struct {
	ByRaw map[string]string // id to ref ("m00001"); BlockedRef if protected
	ByRef map[string]string // ref back to id
}

// CompressionBlock records one compression: the summary shown in place of a
// span, which messages that span held, and the archive holding their text.
type CompressionBlock struct {
	BlockID string
	Tier    Tier
	Topic   string
	Summary string
	// DirectMessageIDs: messages first covered by this block, not through a
	// child.
	DirectMessageIDs []string
	// EffectiveMessageIDs: the direct messages plus those of every absorbed
	// child; this is the set prune removes from the view.
	EffectiveMessageIDs []string
	// DirectBlockIDs: blocks of lower tiers merged into this one.
	DirectBlockIDs []string
	// ArchivePath is absolute; ArchiveRel is relative to the archive root.
	ArchivePath string
	ArchiveRel  string
	// CompressedTokens is what the absorbed content cost.
	CompressedTokens int
	// StartRef/EndRef span the actual coverage, not the requested refs.
	StartRef string
	EndRef   string
	// CreatedAt is a Unix timestamp supplied by the host.
	CreatedAt int64
	Active    bool
	// CompressCallID points back to the tool_use that created the block.
	CompressCallID string
}

// NudgeState remembers when nudges were shown, for spacing the next one.
type NudgeState struct {
	// LastPerMessageNudgeTokens: usage from which growth is measured.
	LastPerMessageNudgeTokens int
	// LastNudgeShownTokens: usage when a nudge was last injected.
	LastNudgeShownTokens int
	// LastShownByTier keeps a separate baseline per tier, so a tier-2 request
	// does not reset the tier-1 rhythm.
	LastShownByTier map[Tier]int
}

// Stats are running counters. The spec names the type without fields; these
// are the ones the pacing and repeat-rejection rules need.
type Stats struct {
	// Compressions counts Compress calls that created at least one block.
	Compressions int
	// BlocksCreated counts every block ever created.
	BlocksCreated int
	// TokensCompressed sums the original cost of everything compressed.
	TokensCompressed int
	// ConsecutiveFailures counts failed Compress calls and ignored nudges
	// since the last successful compression. At Config.MaxCompressAttempts
	// nudging is suppressed.
	ConsecutiveFailures int
	// SuppressedAtTokens is the context size when suppression engaged; 0
	// means nudging is not suppressed.
	SuppressedAtTokens int
	// DeadRanges counts requests for ranges that could not be compressed,
	// keyed by "start..end" as written by the model (normalised).
	DeadRanges map[string]int
}

// CompressionState is noa's whole memory of one session. It is plain data so
// hosts can store it, and it can be rebuilt from the transcript if lost.
type CompressionState struct {
	Blocks      []CompressionBlock
	MessageRefs MessageRefMap
	// TokenSnapshot keeps the token figure printed in each ref tag as first
	// rendered; a figure that changed later would alter old turns and defeat
	// prompt caching.
	TokenSnapshot map[string]int
	Nudge         NudgeState
	Stats         Stats
	NextBlockID   int
	// ArchiveRoot: the session's archive directory, chosen by the host
	// (normally <ArchiveBaseDir>/<SessionID>).
	ArchiveRoot string
	SessionID   string
}

// CreateInitialState starts a session with no blocks and empty, non-nil maps.
func CreateInitialState(sessionID, archiveRoot string) CompressionState {
	return CompressionState{
		MessageRefs:   MessageRefMap{ByRaw: map[string]string{}, ByRef: map[string]string{}},
		TokenSnapshot: map[string]int{},
		Nudge:         NudgeState{LastShownByTier: map[Tier]int{}},
		Stats:         Stats{DeadRanges: map[string]int{}},
		NextBlockID:   1,
		ArchiveRoot:   archiveRoot,
		SessionID:     sessionID,
	}
}

// CloneState deep-copies s so the copy can be changed freely.
func CloneState(s CompressionState) CompressionState {
	out := s
	if s.Blocks != nil {
		out.Blocks = make([]CompressionBlock, len(s.Blocks))
		for i, b := range s.Blocks {
			out.Blocks[i] = cloneBlock(b)
		}
	}
	out.MessageRefs = cloneRefMap(s.MessageRefs)
	out.TokenSnapshot = cloneIntMap(s.TokenSnapshot)
	out.Nudge.LastShownByTier = maps.Clone(s.Nudge.LastShownByTier)
	if out.Nudge.LastShownByTier == nil {
		out.Nudge.LastShownByTier = map[Tier]int{}
	}
	out.Stats.DeadRanges = cloneIntMap(s.Stats.DeadRanges)
	return out
}

func cloneBlock(b CompressionBlock) CompressionBlock {
	b.DirectMessageIDs = append([]string(nil), b.DirectMessageIDs...)
	b.EffectiveMessageIDs = append([]string(nil), b.EffectiveMessageIDs...)
	b.DirectBlockIDs = append([]string(nil), b.DirectBlockIDs...)
	return b
}

func cloneRefMap(m MessageRefMap) MessageRefMap {
	out := MessageRefMap{ByRaw: maps.Clone(m.ByRaw), ByRef: maps.Clone(m.ByRef)}
	if out.ByRaw == nil {
		out.ByRaw = map[string]string{}
	}
	if out.ByRef == nil {
		out.ByRef = map[string]string{}
	}
	return out
}

func cloneIntMap(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return maps.Clone(m)
}

func cloneMessages(msgs []CoreMessage) []CoreMessage {
	return append([]CoreMessage(nil), msgs...)
}

// ActiveBlocks lists copies of the blocks still shown (not absorbed), oldest
// first.
func ActiveBlocks(s CompressionState) []CompressionBlock {
	var out []CompressionBlock
	for _, b := range s.Blocks {
		if b.Active {
			out = append(out, cloneBlock(b))
		}
	}
	return out
}

// FindBlock looks a block up by id (any form ParseBlockID accepts); the result
// aliases s.Blocks so callers can update it. nil if absent.
func FindBlock(s *CompressionState, blockID string) *CompressionBlock {
	if id, ok := ParseBlockID(blockID); ok {
		blockID = id
	}
	for i := range s.Blocks {
		if s.Blocks[i].BlockID == blockID {
			return &s.Blocks[i]
		}
	}
	return nil
}

// CoveredMessageIDs collects the messages hidden behind live blocks, the set
// prune leaves out of the view.
func CoveredMessageIDs(s CompressionState) map[string]bool {
	out := map[string]bool{}
	for _, b := range s.Blocks {
		if !b.Active {
			continue
		}
		for _, id := range b.EffectiveMessageIDs {
			out[id] = true
		}
	}
	return out
}

// coveringBlock maps each covered message id to the active block covering it.
func coveringBlock(s CompressionState) map[string]string {
	out := map[string]string{}
	for _, b := range s.Blocks {
		if !b.Active {
			continue
		}
		for _, id := range b.EffectiveMessageIDs {
			out[id] = b.BlockID
		}
	}
	return out
}

// AllocateBlockID returns a fresh "bN" and bumps the counter. Tiers share a
// single counter, so comparing ids tells which block came first.
func AllocateBlockID(s *CompressionState) string {
	if s.NextBlockID < 1 {
		s.NextBlockID = 1
	}
	id := "b" + itoa(s.NextBlockID)
	s.NextBlockID++
	return id
}
