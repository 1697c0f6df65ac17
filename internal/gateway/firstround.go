package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The first compression of a conversation (issue 27). Until a conversation
// is engaged the gateway forwards it as the client sent it, and the
// provider has cached that prefix. Offering Compress at that point would
// change the tools, which come first in the provider's cache order, so the
// round asking for the compression would be written to the cache whole
// (1.25x the conversation) only to ask for a summary. The first round
// instead re-sends the client's request as it came, its messages byte for
// byte, plus one instruction after the last of them: reply with a summary
// of the span the gateway names, between summary tags, calling no tool.
// That round reads the client's prefix from the cache. The gateway applies
// the summary as the model's Compress call over the span. A round that does
// not give one (a tool call, no tags, a summary too short) is dropped, and
// the conversation is engaged the usual way: noa's tools offered, the nudge
// shown.

// Tags around the summary the first round asks for.
const (
	summaryOpen  = "<summary>"
	summaryClose = "</summary>"
)

// summaryRoundBody is the first round's request: the client's request q as
// it came, instruction appended after its last message, not streamed. It
// reports false when the request cannot take the instruction: its last
// message is not the user's (or a tool's), or its tool_choice makes the
// model call a tool.
func summaryRoundBody(q *request, instruction string) ([]byte, bool) {
	if len(q.msgs) == 0 || forcesTool(q) {
		return nil, false
	}
	last := q.msgs[len(q.msgs)-1]
	msgs := make([]json.RawMessage, 0, len(q.head)+len(q.msgs)+1)
	msgs = append(msgs, q.head...)
	for _, m := range q.msgs[:len(q.msgs)-1] {
		msgs = append(msgs, m.raw)
	}
	switch {
	case q.api == anthropicAPI && last.role == "user":
		m := object(last.raw)
		var s string
		var blocks []json.RawMessage
		switch {
		case json.Unmarshal(m["content"], &s) == nil:
			blocks = []json.RawMessage{textBlock(s)}
		case json.Unmarshal(m["content"], &blocks) == nil:
		default:
			return nil, false
		}
		m["content"] = marshal(append(blocks, textBlock(instruction)))
		msgs = append(msgs, marshal(m))
	case q.api == openaiAPI && (last.role == "user" || last.role == "tool"):
		msgs = append(msgs, last.raw, marshal(map[string]any{"role": "user", "content": instruction}))
	default:
		return nil, false
	}
	top := make(map[string]json.RawMessage, len(q.top))
	for k, v := range q.top {
		top[k] = v
	}
	top["messages"] = joinArray(msgs)
	if _, ok := top["stream"]; ok {
		top["stream"] = json.RawMessage("false")
	}
	delete(top, "stream_options")
	return encodeTop(top, q.keys), true
}

// forcesTool reports whether q's tool_choice obliges the model to call a
// tool, which the first round must not.
func forcesTool(q *request) bool {
	raw := q.top["tool_choice"]
	if len(raw) == 0 {
		return false
	}
	if s, ok := decodeString(raw); ok {
		return s == "required" // OpenAI
	}
	var c struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &c)
	switch c.Type {
	case "any", "tool", "function":
		return true
	}
	return false
}

// summaryRoundReply is the summary in the first round's answer b, an error
// saying why there is none: the answer calls a tool, has no summary tags, or
// the summary is shorter than minChars characters.
func summaryRoundReply(p api, b []byte, minChars int) (string, error) {
	var text strings.Builder
	if p == anthropicAPI {
		var a struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		for _, c := range a.Content {
			switch c.Type {
			case "tool_use", "server_tool_use":
				return "", fmt.Errorf("the answer calls a tool")
			case "text":
				text.WriteString(c.Text)
			}
		}
	} else {
		var a struct {
			Choices []struct {
				Message struct {
					Content   *string           `json:"content"`
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		if len(a.Choices) == 0 {
			return "", fmt.Errorf("the answer has no choices")
		}
		m := a.Choices[0].Message
		if len(m.ToolCalls) > 0 {
			return "", fmt.Errorf("the answer calls a tool")
		}
		if m.Content != nil {
			text.WriteString(*m.Content)
		}
	}
	s := text.String()
	i := strings.Index(s, summaryOpen)
	if i < 0 {
		return "", fmt.Errorf("the answer has no %s", summaryOpen)
	}
	s = s[i+len(summaryOpen):]
	if j := strings.LastIndex(s, summaryClose); j >= 0 {
		s = s[:j]
	}
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n < minChars {
		return "", fmt.Errorf("the summary has %d characters, fewer than the %d required", n, minChars)
	}
	return s, nil
}

// summaryInstruction asks for the first summary: of everything from the
// message from describes to the one to describes (describe; from empty:
// from the first message after the task), in at most maxChars characters.
// The conversation is tokens of a window tokens.
func summaryInstruction(tokens, window int, from, to string, maxChars int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcproxy] This conversation holds about %d tokens of your %d-token window. Before you continue, free room: ", tokens, window)
	b.WriteString("write one summary of the earlier part of the conversation, ")
	if from == "" {
		b.WriteString("from the first message after the task ")
	} else {
		fmt.Fprintf(&b, "from %s ", from)
	}
	fmt.Fprintf(&b, "up to and including %s. ", to)
	b.WriteString("That part will be replaced by your summary; its full text stays archived and can be read back later. ")
	b.WriteString("The task and the latest messages stay as they are. ")
	b.WriteString("Keep in the summary what the rest of the work needs: what was tried and found, decisions and their reasons, ")
	b.WriteString("exact file paths, names, commands, values and error messages still relevant, and what remains to do. ")
	fmt.Fprintf(&b, "Reply with only the summary between %s and %s, at most %d characters, and call no tool in this reply; ", summaryOpen, summaryClose, maxChars)
	b.WriteString("the conversation then continues where it was.")
	return b.String()
}

// excerpt is the start of text as the first round names a message by: its
// first line, at most n runes.
func excerpt(text string, n int) string {
	text = strings.TrimSpace(text)
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)
	return string(r[:n])
}

// summaryCompressArgs are the Compress arguments that apply the first
// round's summary over the span of refs start to end.
func summaryCompressArgs(start, end, summary string) string {
	return string(marshal(map[string]any{"content": []map[string]string{{"start": start, "end": end, "summary": summary, "topic": "earlier work"}}}))
}

// Bounds of the summary the first round asks for, in characters: a
// twentieth of the span, within these.
const (
	minFirstSummary = 1500
	maxFirstSummary = 8000
)

// spanOf is one range from the start of the earliest of ranges to the end
// of the latest (by their place in view; ids maps a ref to its message),
// measuring their sum. The messages between them that noa protects (a
// user's words, a protected tool's result) stay in view when the span is
// compressed, as noa keeps them, so one compression takes all that is
// compressible: the first round's rewrite of the cache is paid once for
// the lot, not again for each range left behind.
func spanOf(ranges []noa.RangeInfo, view []noa.CoreMessage, ids map[string]string) noa.RangeInfo {
	pos := make(map[string]int, len(view))
	for i, m := range view {
		pos[m.ID] = i
	}
	first, last := ranges[0], ranges[0]
	var tokens, chars int
	for _, r := range ranges {
		if pos[ids[r.StartRef]] < pos[ids[first.StartRef]] {
			first = r
		}
		if pos[ids[r.EndRef]] > pos[ids[last.EndRef]] {
			last = r
		}
		tokens += r.Tokens
		chars += r.Chars
	}
	return noa.RangeInfo{StartRef: first.StartRef, EndRef: last.EndRef, Tokens: tokens, Chars: chars}
}

// turn is noa's Turn for round n of the exchange. On the round that
// engages the conversation it first runs the summary round, and the turn
// returned is the one after its summary was applied (or the engaging turn
// as it was, when the round gave none).
func (x *exchange) turn(n int) (Turn, error) {
	t, err := x.h.Turn(x.r.Context())
	if err != nil || n > 0 || !t.Engaging || len(t.Ranges) == 0 || !x.g.cfg.SummaryRoundEnabled() {
		return t, err
	}
	if !sameView(t.View, x.q.core) {
		// noa cut the client's request to fit the window: as it came, the
		// round would be refused.
		return t, nil
	}
	if err := x.summaryRound(t); err != nil {
		x.g.log.Info("the first compression round gave no summary; noa's nudge asks instead", zap.String("session_id", x.conv), zap.Error(err))
		return t, nil
	}
	return x.h.Turn(x.r.Context())
}

// summaryRound asks the model for a summary of the span of t's ranges, in
// a request that is the client's own plus the instruction, and applies it
// as a Compress call over that span.
func (x *exchange) summaryRound(t Turn) error {
	ids := make(map[string]string, len(t.Refs)) // ref -> message id
	for id, ref := range t.Refs {
		ids[ref.Ref] = id
	}
	r := spanOf(t.Ranges, t.View, ids)
	var from, to string
	for _, m := range t.View {
		switch m.ID {
		case ids[r.StartRef]:
			from = describe(m)
		case ids[r.EndRef]:
			to = describe(m)
		}
	}
	if to == "" {
		return fmt.Errorf("range %s-%s is not in the view", r.StartRef, r.EndRef)
	}
	maxChars := min(max(r.Chars/20, minFirstSummary), maxFirstSummary)
	if room := t.Limit - t.Tokens; room < 400+maxChars/3 {
		// The instruction (at most about 400 tokens) and the summary (about
		// three characters a token) must fit beside the messages.
		return fmt.Errorf("the window leaves %d tokens beside the messages, too few for the round", room)
	}
	body, ok := summaryRoundBody(x.q, summaryInstruction(t.Tokens, t.Limit, from, to, maxChars))
	if !ok {
		return fmt.Errorf("the request cannot take the instruction (its last message is not the user's, or it forces a tool call)")
	}
	// A hidden round of the client's messages plus the instruction.
	x.figures.HiddenRounds++
	x.figures.ForwardedTokens += int64(t.Tokens)
	resp, err := x.g.send(x.r.Context(), x.r, x.p, x.path, body)
	if err != nil {
		return fmt.Errorf("sending the round: %w", err)
	}
	defer resp.Body.Close()
	limit := x.g.cfg.Limits.MaxAnswerBytes
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return fmt.Errorf("reading the answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("the model answered %s", resp.Status)
	case int64(len(b)) > limit:
		return answerTooLarge(limit)
	}
	if top, _, err := decodeTop(b); err == nil {
		x.usage.add(top["usage"])
	}
	summary, err := summaryRoundReply(x.p.api, b, noa.DefaultConfig(t.Limit).Compress.MinSummaryLength)
	if err != nil {
		return err
	}
	summary = withIndex(summary, archiveIndex(t.View, t.Refs, r.StartRef, r.EndRef), noa.DefaultConfig(t.Limit).Compress.MaxSummaryLength)
	id := "toolu_mcproxy_" + r.StartRef + "_" + r.EndRef
	call := noa.CoreMessage{ID: "gw_" + id, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: noa.CompressToolName,
		ToolCallID: id, Text: summaryCompressArgs(r.StartRef, r.EndRef, summary)}
	if _, err := x.h.Compress(x.r.Context(), call); err != nil {
		return fmt.Errorf("applying the summary: %w", err)
	}
	return nil
}

// withIndex is the first round's summary followed by the archive index,
// within limit characters (noa's MaxSummaryLength, which Compress would
// otherwise refuse, sending the turn to the costlier nudge round): a
// summary longer than the model was asked for is cut at a line, saying so,
// and the index keeps as many of its lines as fit; limit <= 0 bounds
// nothing.
func withIndex(summary, index string, limit int) string {
	const cutNote = "\n[mcproxy: the summary was cut here to fit the summary limit; the originals are archived]"
	out := summary
	if index != "" {
		out += "\n\n" + index
	}
	if limit <= 0 || utf8.RuneCountInString(out) <= limit {
		return out
	}
	// The index first gives up lines (it points into the archive; the
	// summary is the only account of the span), down to a quarter of the
	// limit.
	lines := strings.Split(index, "\n")
	for len(lines) > 1 && utf8.RuneCountInString(summary)+2+utf8.RuneCountInString(strings.Join(lines, "\n")) > limit &&
		utf8.RuneCountInString(strings.Join(lines, "\n")) > limit/4 {
		lines = lines[:len(lines)-1]
	}
	index = ""
	if len(lines) > 1 {
		index = strings.Join(lines, "\n")
	}
	switch n := utf8.RuneCountInString(summary); {
	case index == "" && n <= limit:
		return summary
	case index != "" && n+2+utf8.RuneCountInString(index) <= limit:
		return summary + "\n\n" + index
	}
	room := limit - utf8.RuneCountInString(cutNote)
	if index != "" {
		room -= 2 + utf8.RuneCountInString(index)
	}
	if utf8.RuneCountInString(summary) > room {
		r := []rune(summary)[:max(room, 0)]
		if i := strings.LastIndexByte(string(r), '\n'); i > len(string(r))/2 {
			r = []rune(string(r)[:i])
		}
		summary = string(r) + cutNote
	}
	if index == "" {
		return summary
	}
	return summary + "\n\n" + index
}

// Bounds of archiveIndex: lines, runes of each line's call, and names of
// each line and their runes.
const (
	maxIndexLines = 80
	indexCall     = 60
	indexNames    = 4
	indexNameRune = 64
)

// codeName is a name as code and listings write them: a run of letters,
// digits and "_./:-" starting with a letter or "_".
var codeName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_./:-]*[A-Za-z0-9_]`)

// names are the code names of text: those that read as a path or an
// identifier rather than a word of prose (they hold "_", "." or "/", or a
// lower-case letter before an upper-case one), 6 to 60 bytes long.
func names(text string) []string {
	var out []string
	for _, n := range codeName.FindAllString(text, -1) {
		if len(n) < 6 || len(n) > 60 {
			continue
		}
		if strings.ContainsAny(n, "_./") || camel(n) {
			out = append(out, n)
		}
	}
	return out
}

func camel(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= 'a' && s[i-1] <= 'z' && s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// nameCounts is how many messages of view hold each code name.
func nameCounts(view []noa.CoreMessage) map[string]int {
	df := map[string]int{}
	for _, m := range view {
		seen := map[string]bool{}
		for _, n := range names(m.Text) {
			if !seen[n] {
				seen[n] = true
				df[n]++
			}
		}
	}
	return df
}

// rareNames are the code names of a tool result that the fewest messages
// hold (df), first seen first on a tie, leaving out those of the call
// that asked for it: what the result taught, so that the index says where
// to read a name back from, not only which call it was.
func rareNames(result, call string, df map[string]int) string {
	inCall := map[string]bool{}
	for _, n := range names(call) {
		inCall[n] = true
	}
	type cand struct {
		name    string
		df, pos int
	}
	var cands []cand
	seen := map[string]bool{}
	for _, n := range names(result) {
		if !seen[n] && !inCall[n] {
			seen[n] = true
			cands = append(cands, cand{n, df[n], len(cands)})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.df - b.df })
	var out []string
	runes := 0
	for _, c := range cands {
		if len(out) == indexNames || runes+len(c.name) > indexNameRune {
			break
		}
		out = append(out, c.name)
		runes += len(c.name) + 2
	}
	return strings.Join(out, ", ")
}

// archiveIndex lists the tool results of view from ref start to ref end,
// each by its ref, the call that asked for it and the rarest names it
// holds (rareNames), one short line each.
// The first round's summary is written without ref tags in view, so it
// cannot point into the archive; the index does, and a model that needs
// one original later reads it back by ref instead of paging the whole
// block. Past maxIndexLines the largest results are kept.
func archiveIndex(view []noa.CoreMessage, refs map[string]Ref, start, end string) string {
	calls := map[string]noa.CoreMessage{}
	type line struct {
		text   string
		tokens int
		at     int
	}
	var lines []line
	df := nameCounts(view)
	in := false
	for _, m := range view {
		ref := refs[m.ID].Ref
		if ref == start {
			in = true
		}
		if in {
			switch {
			case m.ContentType == noa.CTToolCall:
				calls[m.ToolCallID] = m
			case m.ContentType == noa.CTToolResult && ref != "" && ref != noa.BlockedRef:
				c := calls[m.ToolCallID]
				text := fmt.Sprintf("%s: %s %s", ref, c.ToolName, excerpt(strings.Join(strings.Fields(c.Text), " "), indexCall))
				if names := rareNames(m.Text, c.Text, df); names != "" {
					text += " · " + names
				}
				lines = append(lines, line{text, refs[m.ID].Tokens, len(lines)})
			}
		}
		if ref == end {
			break
		}
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > maxIndexLines {
		slices.SortStableFunc(lines, func(a, b line) int { return b.tokens - a.tokens })
		lines = lines[:maxIndexLines]
		slices.SortFunc(lines, func(a, b line) int { return a.at - b.at })
	}
	var b strings.Builder
	b.WriteString(`Tool results archived in this block, by ref (read_archive {"ref": ...} returns one whole):`)
	for _, l := range lines {
		b.WriteString("\n" + l.text)
	}
	return b.String()
}

// describe names message m for the first round's instruction, by what the
// model wrote or read there.
func describe(m noa.CoreMessage) string {
	switch {
	case m.ContentType == noa.CTToolCall:
		return fmt.Sprintf("your %s call %q", m.ToolName, excerpt(m.Text, 80))
	case m.ContentType == noa.CTToolResult:
		return fmt.Sprintf("the tool result that begins %q", excerpt(m.Text, 80))
	case m.Role == noa.RoleAssistant:
		return fmt.Sprintf("your message that begins %q", excerpt(m.Text, 80))
	}
	return fmt.Sprintf("the message that begins %q", excerpt(m.Text, 80))
}
