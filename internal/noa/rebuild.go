package noa

import "fmt"

// RebuildInput is what RebuildStateFromLog needs to recover lost state.
type RebuildInput struct {
	// Messages: the transcript in order, Compress calls and their answers
	// included.
	Messages []CoreMessage
	// Config and Archiver should be those the session runs with.
	Config   Config
	Archiver Archiver
	// SessionID and ArchiveRoot go into the new state unchanged.
	SessionID   string
	ArchiveRoot string
	CountTokens TokenCountFn
	// CreatedAt and Now date the recreated blocks (noa keeps no clock).
	CreatedAt string
	Now       int64
}

// RebuildResult is the recovered state and a tally of the replay.
type RebuildResult struct {
	State CompressionState
	// Replayed: Compress calls applied again.
	Replayed int
	// Skipped: calls ignored because their recorded answer shows no block;
	// they did not succeed the first time and would not now.
	Skipped  int
	Warnings []string
}

// RebuildStateFromLog recovers compression state from the transcript alone,
// without calling any model. That works because every summary was written
// by the model as a Compress argument and is still in the transcript word
// for word, so re-applying the calls reproduces each summary exactly.
//
// A call is re-applied to the view that existed right before it: refs are
// assigned over the transcript up to that call, and the call's ranges are
// resolved against ProjectView of that prefix. A host that applied the
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
