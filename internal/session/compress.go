package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// compressExample is the shape every corrective message shows.
const compressExample = `{"content": [{"start": "m00012", "end": "m00040", "summary": "...", "topic": "..."}]}`

// parseProblem is the corrective message for arguments noa could not use.
func parseProblem(d noa.CompressParseDiagnostics) string {
	var why string
	switch d.Kind {
	case noa.ParseEmptyInput:
		why = "the call had no arguments"
	case noa.ParseNotObject:
		why = "the arguments are not a JSON object"
	case noa.ParseMissingContent:
		why = `the arguments have no "content" field (found: ` + strings.Join(d.Keys, ", ") + ")"
	case noa.ParseContentNotList:
		why = `"content" is not a list of ranges`
	case noa.ParseTruncated:
		why = "the arguments were cut off before the first complete range"
	case noa.ParseMalformedJSON:
		why = "the arguments are not valid JSON"
	default:
		why = "no range in the call is usable"
	}
	msg := "the arguments could not be used: " + why + ". Nothing was compressed. Call Compress again with arguments shaped like " + compressExample +
		`, where start and end are refs (mNNNNN) or block ids (bN) from the latest range table.`
	if len(d.InvalidReasons) > 0 {
		msg += " Problems found: " + strings.Join(d.InvalidReasons, "; ") + "."
	}
	return msg
}

// Panel is the answer to a Compress call.
type Panel struct {
	// Text is noa's panel for the model: what was compressed and how much
	// it saved, or what to correct.
	Text string
	// IsError is set when nothing was compressed and noa reported errors.
	IsError bool
	// Blocks are the ids of the blocks the call created.
	Blocks []string
	// Call and Result are the call and the panel as recorded in the
	// session's stream (in the view noa projects, the call's summaries are
	// stubbed, since the summary messages carry them).
	Call, Result noa.CoreMessage
}

// Compress applies one Compress call with raw JSON arguments and returns the
// panel for the model. It records the call and the panel itself: the
// order of effects is archives, then the transcript, then state.json, so a
// crash between any two leaves the session consistent. Errors and warnings
// in the panel are the model's way to correct its call; a call that
// compresses nothing changes no block, ref or archive (noa's pacing
// counters do count it as a failed attempt).
//
// A Go error means the call could not be recorded (the transcript could not
// be written, the host is closed, ctx ended); any archives it wrote have
// been removed and nothing changed.
func (h *Host) Compress(ctx context.Context, raw json.RawMessage) (Panel, error) {
	return h.compress(ctx, noa.CoreMessage{Text: string(raw)}, "")
}

// CompressCall is Compress for a front that names the call itself: the
// gateway records the model's own Compress tool call (call.ID, its
// ToolCallID, call.Text the JSON arguments) so the provider's tool_use and
// tool_result stay paired, and the result under resultID. An empty id is
// numbered as Compress numbers it.
func (h *Host) CompressCall(ctx context.Context, call noa.CoreMessage, resultID string) (Panel, error) {
	return h.compress(ctx, call, resultID)
}

func (h *Host) compress(ctx context.Context, c noa.CoreMessage, resultID string) (Panel, error) {
	if err := h.begin(ctx); err != nil {
		return Panel{}, err
	}
	defer h.mu.Unlock()
	raw := json.RawMessage(c.Text)
	msgID, callID := c.ID, c.ToolCallID
	if msgID == "" {
		msgID, callID = h.newIDs()
	} else if h.recorded(msgID) || h.recorded(resultID) {
		return Panel{}, fmt.Errorf("recording Compress call %q: already recorded", msgID)
	}
	if callID == "" {
		callID = msgID
	}
	if resultID == "" {
		resultID, _ = h.newIDs()
	}
	call := noa.CoreMessage{ID: msgID, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: noa.CompressToolName, ToolCallID: callID, Text: string(raw)}

	before := h.eng.ProjectedTokens()
	// What the engine is put back to if the call cannot be recorded; O(n),
	// as the call itself is.
	prev := h.eng.State()
	now := h.opts.Now()
	meta := &compressRecord{CallID: callID, CreatedAt: now.UTC().Format("2006-01-02T15:04:05Z07:00"), Now: now.Unix()}
	in := noa.CompressInput{CallID: callID, Archiver: h.arch, CreatedAt: meta.CreatedAt, Now: meta.Now}

	parsed := noa.ParseCompressArgs(raw)
	var ar noa.ApplyResult
	switch d := parsed.Diagnostics; {
	case !d.Ok && d.Kind == noa.ParseNoValidRanges && d.InvalidItems == 0:
		ar = h.eng.Compress(in) // nothing asked: noa's neutral answer
	case !d.Ok:
		ar = noa.ApplyResult{State: prev, Errors: []string{parseProblem(d)}}
	default:
		in.Ranges = parsed.Ranges
		ar = h.eng.Compress(in)
		if d.Kind != noa.ParseOK {
			ar.Warnings = append(ar.Warnings, fmt.Sprintf("your arguments arrived malformed (%s) and were repaired; check that every range you meant is listed above", d.Kind))
		}
		if d.InvalidItems > 0 {
			ar.Warnings = append(ar.Warnings, fmt.Sprintf("%d range(s) were unusable and skipped: %s", d.InvalidItems, strings.Join(d.InvalidReasons, "; ")))
		}
	}
	panel := noa.FormatPanel(noa.PanelInput{Result: ar, BeforeTokens: before, AfterTokens: h.eng.ProjectedTokens(), Messages: h.eng.View()})
	for _, b := range ar.BlocksCreated {
		meta.Blocks = append(meta.Blocks, b.BlockID)
		meta.Archives = append(meta.Archives, b.ArchiveRel)
	}
	meta.Errors = len(ar.Errors)
	h.hook("archived")

	result := noa.CoreMessage{ID: resultID, Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: noa.CompressToolName, ToolCallID: callID, Text: panel}
	resRec := fromCore(result)
	resRec.IsError = len(ar.BlocksCreated) == 0 && len(ar.Errors) > 0
	off, err := h.appendRecords(
		record{Kind: kindMessage, Message: fromCore(call)},
		record{Kind: kindMessage, Message: resRec, Pacing: pacingOf(ar.State), Compress: meta},
	)
	if err != nil {
		for _, b := range ar.BlocksCreated {
			_ = h.arch.Remove(b.ArchivePath)
		}
		h.eng.SetState(prev)
		return Panel{}, fmt.Errorf("recording Compress call: %w", err)
	}
	h.push(call)
	h.push(result)
	h.eng.Append(call, result)
	h.blocks = ar.State.Blocks
	// Compress keeps h.mu through its fsync: the order on disk is archives,
	// transcript, state, and nothing else of the session moves meanwhile.
	if err := h.durable(off); err != nil {
		return Panel{}, fmt.Errorf("recording Compress call: %w", err)
	}
	h.hook("logged")
	if err := h.saveState(); err != nil {
		h.log.Warn("writing state.json after Compress; the transcript has it", zap.Error(err))
	}
	return Panel{Text: panel, IsError: resRec.IsError, Blocks: meta.Blocks, Call: call, Result: result}, nil
}

// hook calls the test hook of a Compress stage.
func (h *Host) hook(stage string) {
	if h.opts.hook != nil {
		h.opts.hook(stage)
	}
}
