package noa

// NodeIO is handed from node to node: the view so far and the state each
// node may update.
type NodeIO struct {
	Messages []CoreMessage
	State    CompressionState
	// Nudge is filled in by nudge-inject, and stays nil on turns without one.
	Nudge *NudgeDecision
	// TruncatedCount is filled in by emergency-truncate.
	TruncatedCount int
}

// PipelineContext holds the inputs shared by all nodes, which must not
// change them.
type PipelineContext struct {
	Config Config
	// TokenCount is this turn's context size in tokens.
	TokenCount int
	// CountTokens estimates tokens; DefaultCountTokens when nil.
	CountTokens TokenCountFn
}

// PipelineNode is a step of ProcessTurn.
type PipelineNode interface {
	Name() string
	// Enabled decides whether Run is called this turn; when false the node
	// is bypassed entirely.
	Enabled(io NodeIO, ctx PipelineContext) bool
	Run(io NodeIO, ctx PipelineContext) NodeIO
}

// RunPipeline threads io through nodes in order. Each node relies on what
// the ones before it established (refs exist before anything is resolved,
// coverage is pruned before sizes are judged, truncation is known before the
// nudge is written).
func RunPipeline(nodes []PipelineNode, io NodeIO, ctx PipelineContext) NodeIO {
	for _, n := range nodes {
		if n.Enabled(io, ctx) {
			io = n.Run(io, ctx)
		}
	}
	return io
}

// ProcessTurnInput is what ProcessTurn needs for one turn.
type ProcessTurnInput struct {
	// Messages: the whole history, newly converted by the host.
	Messages []CoreMessage
	State    CompressionState
	Config   Config
	// TokenCount: this turn's context size, the basis of all pressure and
	// growth checks. If it is not positive, the pruned view is counted
	// instead (as ProjectedTokenCount would).
	TokenCount int
	// CountTokens, if non-nil, replaces the default token estimate.
	CountTokens TokenCountFn
}

// ProcessTurnResult is the view for the host to send, plus the new state.
type ProcessTurnResult struct {
	Messages []CoreMessage
	State    CompressionState
	// Nudge: the nudge added this turn, or nil.
	Nudge *NudgeDecision
	// TruncatedCount: messages shortened by emergency truncation.
	TruncatedCount int
}

// turnNodes is the fixed node order of ProcessTurn.
var turnNodes = []PipelineNode{
	assignRefsNode{},
	pruneNode{},
	hideCompressCallsNode{},
	truncateNode{},
	nudgeNode{},
}

// ProcessTurn builds the view to send this turn. It has no side effects: the
// inputs stay untouched, equal inputs yield equal results, and the caller
// may keep and change what it gets back.
//
// Node order is fixed: assign-refs (new messages get refs and frozen token
// sizes), prune (covered content replaced by summaries, orphans stripped),
// hide-compress-calls, emergency-truncate, nudge-inject.
func ProcessTurn(in ProcessTurnInput) ProcessTurnResult {
	ctx := PipelineContext{Config: in.Config, TokenCount: in.TokenCount, CountTokens: countFn(in.CountTokens)}
	io := NodeIO{Messages: in.Messages, State: CloneState(in.State)}
	// The sizing prefix (refs, prune, hide) comes first either way; when the
	// host supplies no measurement, the pruned view it leaves is measured,
	// exactly as ProjectedTokenCount would, without projecting twice.
	io = RunPipeline(turnNodes[:3], io, ctx)
	if ctx.TokenCount <= 0 {
		for _, m := range io.Messages {
			ctx.TokenCount += CountMessageTokens(m, ctx.CountTokens)
		}
	}
	io = RunPipeline(turnNodes[3:], io, ctx)
	//lint:ignore S1016 the spec declares the two types apart; they may diverge
	return ProcessTurnResult{Messages: io.Messages, State: io.State, Nudge: io.Nudge, TruncatedCount: io.TruncatedCount}
}

// syncRefs assigns refs to new messages (hard-protected ones are BLOCKED,
// noa's own messages skipped) and freezes each new ref's token size. st must
// be owned by the caller: its maps are extended in place.
func syncRefs(msgs []CoreMessage, st CompressionState, cfg Config, count TokenCountFn) CompressionState {
	count = countFn(count)
	if st.MessageRefs.ByRaw == nil || st.MessageRefs.ByRef == nil {
		st.MessageRefs = cloneRefMap(st.MessageRefs)
	}
	if st.TokenSnapshot == nil {
		st.TokenSnapshot = map[string]int{}
	}
	refs := st.MessageRefs
	var fresh []CoreMessage
	for _, m := range msgs {
		if _, seen := refs.ByRaw[m.ID]; !seen && m.ID != "" && !isSynthetic(m) {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) == 0 {
		return st
	}
	// Protection is judged on the whole view: a result is protected when
	// its call is, even if only the result is new.
	hard := hardProtectedIDs(msgs, cfg)
	assignRefsInto(refs, fresh, len(refs.ByRef)+1, func(m CoreMessage) bool { return hard[m.ID] }, isSynthetic)
	for _, m := range fresh {
		if ref := refs.ByRaw[m.ID]; ref != "" && ref != BlockedRef {
			if _, frozen := st.TokenSnapshot[ref]; !frozen {
				st.TokenSnapshot[ref] = CountMessageTokens(m, count)
			}
		}
	}
	return st
}

type assignRefsNode struct{}

func (assignRefsNode) Name() string                         { return "assign-refs" }
func (assignRefsNode) Enabled(NodeIO, PipelineContext) bool { return true }
func (assignRefsNode) Run(io NodeIO, ctx PipelineContext) NodeIO {
	io.State = syncRefs(io.Messages, io.State, ctx.Config, ctx.CountTokens)
	return io
}

type pruneNode struct{}

func (pruneNode) Name() string                         { return "prune" }
func (pruneNode) Enabled(NodeIO, PipelineContext) bool { return true }
func (pruneNode) Run(io NodeIO, _ PipelineContext) NodeIO {
	io.Messages = prune(io.Messages, io.State)
	return io
}

type hideCompressCallsNode struct{}

func (hideCompressCallsNode) Name() string                         { return "hide-compress-calls" }
func (hideCompressCallsNode) Enabled(NodeIO, PipelineContext) bool { return true }
func (hideCompressCallsNode) Run(io NodeIO, _ PipelineContext) NodeIO {
	io.Messages = hideCompressCalls(io.Messages, io.State)
	return io
}

type truncateNode struct{}

func (truncateNode) Name() string { return "emergency-truncate" }
func (truncateNode) Enabled(_ NodeIO, ctx PipelineContext) bool {
	c := ctx.Config
	return c.ModelContextLimit > 0 && c.Truncate.Threshold > 0
}
func (truncateNode) Run(io NodeIO, ctx PipelineContext) NodeIO {
	r, _ := truncateView(io.Messages, io.State, ctx.TokenCount, ctx.Config, ctx.CountTokens)
	io.Messages = r.Messages
	io.TruncatedCount = r.TruncatedCount
	return io
}

type nudgeNode struct{}

func (nudgeNode) Name() string { return "nudge-inject" }
func (nudgeNode) Enabled(_ NodeIO, ctx PipelineContext) bool {
	return ctx.Config.ModelContextLimit > 0
}
func (nudgeNode) Run(io NodeIO, ctx PipelineContext) NodeIO {
	cfg := ctx.Config
	st := &io.State
	tokens := ctx.TokenCount
	beforeNudge(st, cfg, tokens)
	rec := BuildRecommendation(io.Messages, *st, cfg, ctx.CountTokens)
	d := DecideNudge(DecideNudgeInput{
		Messages:       io.Messages,
		State:          *st,
		Config:         cfg,
		TokenCount:     tokens,
		Recommendation: rec,
		CountTokens:    ctx.CountTokens,
		TruncatedCount: io.TruncatedCount,
	})
	if !d.ShouldInject {
		return io
	}
	msg := nudgeShown(st, d, tokens)
	msgs := make([]CoreMessage, len(io.Messages), len(io.Messages)+1)
	copy(msgs, io.Messages)
	io.Messages = append(msgs, msg)
	io.Nudge = &d
	return io
}

// beforeNudge is the pacing bookkeeping of nudge-inject that precedes the
// decision; st is owned by the caller.
func beforeNudge(st *CompressionState, cfg Config, tokens int) {
	if st.Nudge.LastShownByTier == nil {
		st.Nudge.LastShownByTier = map[Tier]int{}
	}
	// Growth is measured from the smallest size since the last nudge, so a
	// compression that shrank the context restarts the cadence from there.
	if tokens < st.Nudge.LastPerMessageNudgeTokens {
		st.Nudge.LastPerMessageNudgeTokens = tokens
	}
	// Suppression bookkeeping: engage at the limit, lift after growth.
	if lim := cfg.MaxCompressAttempts; lim > 0 && st.Stats.ConsecutiveFailures >= lim {
		if st.Stats.SuppressedAtTokens == 0 {
			st.Stats.SuppressedAtTokens = max(tokens, 1)
		} else if tokens-st.Stats.SuppressedAtTokens >= NudgeGrowthFloor(cfg) {
			st.Stats.ConsecutiveFailures = 0
			st.Stats.SuppressedAtTokens = 0
		}
	}
}

// nudgeShown records in st that the nudge d was injected at tokens, and
// returns the message that carries it.
func nudgeShown(st *CompressionState, d NudgeDecision, tokens int) CoreMessage {
	_, text := RenderNudgeText(d, NudgeSections{})
	st.Nudge.LastPerMessageNudgeTokens = tokens
	st.Nudge.LastNudgeShownTokens = tokens
	st.Nudge.LastShownByTier[d.Tier] = tokens
	// An injected nudge is an attempt; a successful compression resets it.
	st.Stats.ConsecutiveFailures++
	return nudgeMessage(text)
}

func nudgeMessage(text string) CoreMessage {
	return CoreMessage{ID: NudgeMessageID, Role: RoleUser, ContentType: CTText, Text: text}
}
