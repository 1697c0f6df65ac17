package gateway

import (
	"encoding/json"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// dialect renders messages in one provider's format.
type dialect interface {
	// partial renders message m with only the parts idx (indexes into
	// request.parts, in order), a part's text replaced where text has it,
	// and a ref tag added to the parts tags names.
	partial(q *request, m message, idx []int, text map[int]string, tags map[int]string) json.RawMessage
	// summary renders a summary noa shows in place of a span.
	summary(text string) json.RawMessage
	// call and result render a tool exchange the gateway ran itself
	// (Compress, read_archive).
	call(c noa.CoreMessage) json.RawMessage
	result(r noa.CoreMessage) json.RawMessage
	// nudge adds noa's request to compress after the last message.
	nudge(msgs []json.RawMessage, text string) []json.RawMessage
}

// projection is what the request's messages become.
type projection struct {
	View  []noa.CoreMessage
	Refs  map[string]Ref
	Nudge string
	// Calls replaces the rendering of the gateway's own tool calls made in
	// this request: by tool call id, the assistant message as the model
	// wrote it (nil: sent with an earlier call's message).
	Calls map[string]json.RawMessage
}

// identity is the projection that changes nothing: every part in order, no
// tag, no nudge. Rendering it gives back the request's own messages.
func (q *request) identity() projection {
	return projection{View: q.core}
}

// render converts a projection back into the provider's messages. A message
// all of whose parts are shown unchanged and untagged is re-emitted as its
// original JSON; others are rebuilt from their parts' original JSON.
// Summaries and the gateway's own tool exchanges are rendered new. A view
// message that is none of these (not in this request) is left out. For
// Anthropic the client's cache breakpoints on parts left out move to the
// block that now ends their prefix (breakpoints.go).
func (q *request) render(d dialect, p projection) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(q.head)+len(q.msgs)+2)
	out = append(out, q.head...)
	// Breakpoint bookkeeping: the last part shown and the index in out of
	// its message, the last summary since it and the last of all.
	anthropic := q.api == anthropicAPI
	var moves []moved
	shown, shownOut, gapSummary, lastSummary := -1, -1, -1, -1
	gap := func(end, next int) {
		if !anthropic {
			return
		}
		var cc json.RawMessage
		for j := shown + 1; j < end; j++ {
			if c := markOf(q.parts[j].raw); c != nil {
				cc = c
			}
		}
		switch {
		case cc == nil:
		case gapSummary >= 0:
			moves = append(moves, moved{gapSummary, cc})
		case shownOut >= 0:
			moves = append(moves, moved{shownOut, cc})
		case next >= 0:
			moves = append(moves, moved{next, cc})
		}
	}
	curOut := -1
	cur := -1
	var idx []int
	text := map[int]string{}
	tags := map[int]string{}
	flush := func() {
		if cur < 0 {
			return
		}
		m := q.msgs[cur]
		if len(idx) == m.n && len(text) == 0 && len(tags) == 0 {
			out = append(out, m.raw)
		} else {
			out = append(out, d.partial(q, m, idx, text, tags))
		}
		cur, idx = -1, nil
		text, tags = map[int]string{}, map[int]string{}
	}
	for _, v := range p.View {
		if i, ok := q.byID[v.ID]; ok {
			pt := q.parts[i]
			if pt.msg != cur {
				flush()
				cur, curOut = pt.msg, len(out)
			}
			if i > shown {
				gap(i, curOut)
				shown, shownOut, gapSummary = i, curOut, -1
			}
			idx = append(idx, i)
			if v.Text != q.core[i].Text && (pt.kind == kindText || pt.kind == kindToolResult || pt.kind == kindOpaque) {
				text[i] = v.Text
			}
			if r, ok := p.Refs[v.ID]; ok && r.Ref != "" && r.Ref != noa.BlockedRef && taggable(q.core[i], pt) {
				tags[i] = noa.FormatRefTag(r.Ref, r.Tokens)
			}
			continue
		}
		flush()
		switch {
		case strings.HasPrefix(v.ID, noa.SummaryIDPrefix):
			out = append(out, d.summary(v.Text))
			gapSummary, lastSummary = len(out)-1, len(out)-1
		case v.ContentType == noa.CTToolCall:
			if raw, ok := p.Calls[v.ToolCallID]; ok {
				if len(raw) > 0 {
					out = append(out, raw)
				}
				continue
			}
			out = append(out, d.call(v))
		case v.ContentType == noa.CTToolResult:
			out = append(out, d.result(v))
		}
	}
	flush()
	if anthropic {
		gap(len(q.parts), -1)
		out = q.placeBreakpoints(out, moves, lastSummary)
		// A round whose call is sent as the model wrote it (with thinking,
		// or text the client saw) is rendered otherwise later: marking it
		// would write what no later request reads.
		if n := len(p.View); n > 0 && p.View[n-1].ContentType == noa.CTToolResult && len(p.Calls) == 0 {
			if _, theirs := q.byID[p.View[n-1].ID]; !theirs {
				out = q.markTail(out)
			}
		}
	}
	if p.Nudge != "" {
		out = d.nudge(out, p.Nudge)
	}
	return out
}

// taggable: ref tags go on what the user side sent (text, attachments, tool
// results), never into the model's own turns, whose blocks (thinking
// signatures, tool calls) must come back as the model wrote them.
func taggable(m noa.CoreMessage, p part) bool {
	return (m.Role == noa.RoleUser || m.Role == noa.RoleTool) && p.kind != kindEmpty
}

// rawString is s as a JSON string.
func rawString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// marshal encodes v, which holds only encodable values (maps, strings and
// raw JSON that was decoded from the request).
func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// object decodes a JSON object (an empty map when raw is not one).
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return map[string]json.RawMessage{}
	}
	return m
}

// textBlock is a text content block or part: {"type":"text","text":s}.
func textBlock(s string) json.RawMessage {
	return marshal(map[string]any{"type": "text", "text": s})
}
