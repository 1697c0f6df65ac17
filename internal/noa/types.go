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

// ContentType is the kind of content a CoreMessage carries. One host message
// flattens into 0..N CoreMessages, one per content block.
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

// Tier is a block's compression level, 1..Config.Tiers.MaxTier. A block's
// tier is fixed when it is created.
type Tier int

// TokenCountFn estimates the token cost of a text.
type TokenCountFn func(text string) int

// MessageRefMap is the two-way index between host message ids and the
// mNNNNN refs the model uses. A ref, once assigned, is never reassigned.
type MessageRefMap struct {
	ByRaw map[string]string // host id -> "m00001", or BlockedRef
	ByRef map[string]string // "m00001" -> host id
}

// CompressionBlock is one compressed span: the model's summary standing in
// for it, the messages it covers, and where its originals are archived.
type CompressionBlock struct {
	BlockID string
	Tier    Tier
	Topic   string
	Summary string
	// DirectMessageIDs are the messages this block newly covers.
	DirectMessageIDs []string
	// EffectiveMessageIDs are all messages covered, absorbed children
	// included; prune hides exactly these.
	EffectiveMessageIDs []string
	// DirectBlockIDs are the lower-tier blocks this block absorbed.
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
	// CompressCallID is the tool_use id of the creating Compress call.
	CompressCallID string
}

// NudgeState paces nudge injection.
type NudgeState struct {
	// LastPerMessageNudgeTokens is the growth baseline.
	LastPerMessageNudgeTokens int
	// LastNudgeShownTokens is the token count at the last injection.
	LastNudgeShownTokens int
	// LastShownByTier paces each tier independently.
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

// CompressionState is everything noa remembers about a session: plain data,
// serialisable and rebuildable from the transcript.
type CompressionState struct {
	Blocks      []CompressionBlock
	MessageRefs MessageRefMap
	// TokenSnapshot freezes each ref's token count at first render so the
	// number in a ref tag never drifts (a changed tag invalidates caches).
	TokenSnapshot map[string]int
	Nudge         NudgeState
	Stats         Stats
	NextBlockID   int
	// ArchiveRoot is <ArchiveBaseDir>/<SessionID>, computed by the host.
	ArchiveRoot string
	SessionID   string
}

// CreateInitialState returns the zero state for a fresh session.
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

// ActiveBlocks returns copies of the blocks currently standing in for content,
// in creation order.
func ActiveBlocks(s CompressionState) []CompressionBlock {
	var out []CompressionBlock
	for _, b := range s.Blocks {
		if b.Active {
			out = append(out, cloneBlock(b))
		}
	}
	return out
}

// FindBlock returns a pointer into s.Blocks, or nil.
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

// CoveredMessageIDs is the union of every active block's effective coverage:
// the set prune hides.
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

// AllocateBlockID hands out the next block id ("bN") and advances the
// counter. One flat sequence across tiers encodes global creation order.
func AllocateBlockID(s *CompressionState) string {
	if s.NextBlockID < 1 {
		s.NextBlockID = 1
	}
	id := "b" + itoa(s.NextBlockID)
	s.NextBlockID++
	return id
}
