package noa

import "fmt"

// RebuildInput replays a session's compressions from its recorded history.
type RebuildInput struct {
	// Messages is the full recorded history, oldest first, including the
	// Compress calls and their results.
	Messages []CoreMessage
	// Config and Archiver mirror the live ones.
	Config   Config
	Archiver Archiver
	// SessionID and ArchiveRoot seed the rebuilt state.
	SessionID   string
	ArchiveRoot string
	CountTokens TokenCountFn
	// CreatedAt and Now stamp rebuilt blocks; this package reads no clock.
	CreatedAt string
	Now       int64
}

// RebuildResult reports the replay.
type RebuildResult struct {
	State CompressionState
	// Replayed is how many compressions were reapplied.
	Replayed int
	// Skipped is how many recorded calls were passed over: they failed then
	// (their recorded panel lists no block), so replaying would fail again.
	Skipped  int
	Warnings []string
}

// RebuildStateFromLog reconstructs compression state from the conversation
// itself, with no model: the summaries were arguments of the model's Compress
// calls, recorded verbatim, so replaying the calls yields byte-identical
// summaries.
//
// Each successful call is replayed against the view as it was just before
// the call: refs are synced over the history up to it, and ProjectView of
// that prefix is what the call is resolved against. A host that applied the
// call live against the same view (ApplyInput.Messages = ProjectView of the
// history before the call) therefore gets identical blocks, refs and token
// snapshots. Runtime pacing (NudgeState and the failure counters in Stats)
// is not part of the log and starts fresh.
func RebuildStateFromLog(in RebuildInput) RebuildResult {
	count := countFn(in.CountTokens)
	st := CreateInitialState(in.SessionID, in.ArchiveRoot)
	res := RebuildResult{}
	results := map[string]string{}
	for _, m := range in.Messages {
		if m.ContentType == CTToolResult && m.ToolCallID != "" {
			if _, seen := results[m.ToolCallID]; !seen {
				results[m.ToolCallID] = m.Text
			}
		}
	}
	for i, m := range in.Messages {
		if m.ContentType != CTToolCall || m.ToolName != CompressToolName {
			continue
		}
		out, ok := results[m.ToolCallID]
		if !ok {
			res.Skipped++
			res.Warnings = append(res.Warnings, fmt.Sprintf("Compress call %s has no recorded result; skipped", m.ToolCallID))
			continue
		}
		want := PanelBlockCount(out)
		if want == 0 {
			res.Skipped++
			continue
		}
		prefix := in.Messages[:i]
		st = syncRefs(prefix, st, in.Config, count)
		view := hideCompressCalls(prune(prefix, st), st)
		parsed := ParseCompressArgs([]byte(m.Text))
		if !parsed.Diagnostics.Ok {
			res.Skipped++
			res.Warnings = append(res.Warnings, fmt.Sprintf("Compress call %s: recorded arguments no longer parse (%s); skipped", m.ToolCallID, parsed.Diagnostics.Kind))
			continue
		}
		ar := ApplyCompression(ApplyInput{
			Ranges:      parsed.Ranges,
			Messages:    view,
			State:       st,
			Config:      in.Config,
			CallID:      m.ToolCallID,
			Archiver:    in.Archiver,
			CreatedAt:   in.CreatedAt,
			Now:         in.Now,
			CountTokens: count,
		})
		if len(ar.BlocksCreated) == 0 {
			res.Skipped++
			res.Warnings = append(res.Warnings, fmt.Sprintf("Compress call %s succeeded live but not on replay: %v", m.ToolCallID, ar.Errors))
			continue
		}
		if len(ar.BlocksCreated) != want {
			res.Warnings = append(res.Warnings, fmt.Sprintf("Compress call %s created %d block(s) on replay, %d live", m.ToolCallID, len(ar.BlocksCreated), want))
		}
		st = ar.State
		res.Replayed++
	}
	st = syncRefs(in.Messages, st, in.Config, count)
	st.Stats.ConsecutiveFailures = 0
	st.Stats.SuppressedAtTokens = 0
	res.State = st
	return res
}
