package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// sseEvent is one server-sent event as read.
type sseEvent struct {
	raw  []byte // the event's bytes, blank line included
	name string
	data string
}

// sseReader reads a model's stream event by event, each event at most
// maxEvent bytes and the stream at most maxTotal (gateway.limits): past
// either it fails with a *refusal naming the limit.
type sseReader struct {
	br                 *bufio.Reader
	maxEvent, maxTotal int64
	total              int64
}

func (g *Gateway) newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 64<<10), maxEvent: g.cfg.Limits.MaxStreamEventBytes, maxTotal: g.cfg.Limits.MaxAnswerBytes}
}

// next reads one event; io.EOF at a clean end of stream.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var raw bytes.Buffer
	var data []string
	for {
		start := raw.Len() // of the line
		var err error
		for {
			var chunk []byte
			chunk, err = s.br.ReadSlice('\n')
			s.total += int64(len(chunk))
			switch {
			case int64(raw.Len()+len(chunk)) > s.maxEvent:
				return ev, &refusal{fmt.Sprintf("mcproxy gateway: the model sent a stream event of more than %d bytes "+
					"(gateway.limits.max_stream_event_bytes); raise gateway.limits.max_stream_event_bytes in mcproxy's config "+
					"if the model's events are that large", s.maxEvent)}
			case s.total > s.maxTotal:
				return ev, answerTooLarge(s.maxTotal)
			}
			raw.Write(chunk)
			if !errors.Is(err, bufio.ErrBufferFull) {
				break // a whole line, or the end
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && raw.Len() > 0 {
				return ev, io.ErrUnexpectedEOF // a cut event
			}
			return ev, err
		}
		l := strings.TrimRight(string(raw.Bytes()[start:]), "\r\n")
		switch {
		case l == "":
			if ev.name == "" && data == nil {
				raw.Reset() // a stray blank line
				continue
			}
			ev.raw, ev.data = raw.Bytes(), strings.Join(data, "\n")
			return ev, nil
		case strings.HasPrefix(l, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(l, "event:"))
		case strings.HasPrefix(l, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(l, "data:"), " "))
		}
	}
}

// answerTooLarge is the refusal of a model answer over
// gateway.limits.max_answer_bytes.
func answerTooLarge(limit int64) *refusal {
	return &refusal{fmt.Sprintf("mcproxy gateway: the model's answer exceeds %d bytes (gateway.limits.max_answer_bytes); "+
		"ask for a shorter answer (a lower max_tokens), or raise gateway.limits.max_answer_bytes in mcproxy's config", limit)}
}

// streamWriter writes events to the client, flushing each. After a failed
// write (the client went away) it writes nothing more. While holding it
// keeps what it is given instead, until release sends it or drop discards
// it: a round that may turn out hidden is held (see runStream).
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	err     error
	holding bool
	// firm holding is released by a client tool call only, not by text.
	firm bool
	held [][]byte
}

func startStream(w http.ResponseWriter, resp *http.Response) *streamWriter {
	copyHeader(w, resp).Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	return &streamWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *streamWriter) raw(b []byte) {
	if s.holding {
		s.held = append(s.held, bytes.Clone(b))
		return
	}
	if s.err != nil {
		return
	}
	if _, s.err = s.w.Write(b); s.err == nil {
		s.err = s.rc.Flush()
	}
}

// now writes b even while holding: an event that carries no content.
func (s *streamWriter) now(b []byte) {
	holding := s.holding
	s.holding = false
	s.raw(b)
	s.holding = holding
}

// hold starts holding; firm: text does not end it (see runStream).
func (s *streamWriter) hold(firm bool) { s.holding, s.firm = true, firm }

// text is the model starting to write text: it ends a hold that is not
// firm.
func (s *streamWriter) text() {
	if !s.firm {
		s.release()
	}
}

// release sends what was held and stops holding.
func (s *streamWriter) release() {
	held := s.held
	s.holding, s.firm, s.held = false, false, nil
	for _, b := range held {
		s.raw(b)
	}
}

// drop discards what was held and stops holding.
func (s *streamWriter) drop() { s.holding, s.firm, s.held = false, false, nil }

func (s *streamWriter) event(name string, data []byte) {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	s.raw(b.Bytes())
}

// streamError ends a stream already under way with the provider's error
// event.
func (x *exchange) streamError(sw *streamWriter, typ, msg string) {
	writeStreamError(sw, x.p.api, typ, msg)
}

// malformed ends the client's stream because the model's was malformed
// (what says how), rather than pass on what the client cannot read or end
// the stream without a word.
func (x *exchange) malformed(sw *streamWriter, what string) {
	x.g.log.Warn("malformed upstream stream", zap.String("api", string(x.p.api)), zap.String("session_id", x.conv), zap.String("problem", what))
	x.streamError(sw, "api_error", "mcproxy gateway: the upstream API sent a malformed stream: "+what)
}

// writeStreamError writes the error event of API a. What was held is
// dropped: the round it belonged to never finished.
func writeStreamError(sw *streamWriter, a api, typ, msg string) {
	sw.drop()
	if a == anthropicAPI {
		sw.event("error", marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}))
		return
	}
	sw.event("", marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}))
}

// nextEvent reads the next upstream event; on a cut stream it ends the
// client's with an error event (unless the client is gone) and reports
// false.
func (x *exchange) nextEvent(sr *sseReader, sw *streamWriter) (sseEvent, bool) {
	ev, err := sr.next()
	var over *refusal
	if errors.As(err, &over) {
		x.g.log.Warn("upstream stream over a limit", zap.String("session_id", x.conv), zap.Error(err))
		x.streamError(sw, "api_error", over.msg)
		return ev, false
	}
	if err != nil {
		if x.r.Context().Err() == nil {
			x.g.log.Warn("upstream stream cut", zap.String("session_id", x.conv), zap.Error(err))
			x.streamError(sw, "api_error", "mcproxy gateway: the upstream stream ended early")
		}
		return ev, false
	}
	return ev, true
}

// round is what one upstream stream held, once read.
type round struct {
	hidden  []hiddenCall
	client  bool            // the model called a client tool
	message json.RawMessage // the assistant message, for the continuation
	usage   map[string]json.RawMessage
	held    []byte // the closing event(s) not yet sent: Anthropic's message_delta data, OpenAI's finish chunk
	usageCh []byte // OpenAI: the usage chunk
	ok      bool   // the stream ended cleanly
}

// runStream serves a streaming request: each round's stream is passed on
// event by event, except the gateway's own tool calls; when a round ends in
// nothing but those, they run and the next round's stream continues the same
// client stream (one message_start, block indexes counting on), and the
// closing event carries usage summed over the rounds.
//
// What a hidden round writes beside its calls belongs to it, and the
// client never sees a hidden round (issue 27), so each round but the final
// one is held until it shows it is not hidden: a client tool call ends the
// hold, and so does the first text of a round noa did not ask to compress
// (no nudge), so an ordinary answer's text streams at once (thinking
// before it waits for it: thinking does not show whether a hidden call
// follows). A round asked to compress is held until a client tool call or
// its end, since text there most likely precedes a Compress call. A round
// that turns out hidden is dropped if still held; one whose text was sent
// (read_archive mid-answer, a Compress nobody asked for) stays delivered,
// and its continuation shows the model that text (see keep). runJSON
// decides alike (see delivers), so a streamed answer and a JSON one carry
// the same content.
func (x *exchange) runStream() {
	var sw *streamWriter
	next := 0 // the client's next content block index (Anthropic) or tool call index (OpenAI)
	streamID := ""
	for n := 0; ; n++ {
		t, err := x.turn(n)
		if err != nil {
			if sw == nil {
				x.fallback(err)
			} else {
				x.g.log.Error("projection failed mid-stream", zap.String("session_id", x.conv), zap.Error(err))
				x.streamError(sw, "api_error", "mcproxy gateway: projection failed: "+err.Error())
			}
			return
		}
		final := x.final(n)
		x.sent(t, n)
		resp, err := x.g.send(x.r.Context(), x.r, x.p, x.path, x.build(t, final))
		if err != nil {
			if sw == nil {
				x.g.upstreamFailed(x.w, x.r, x.p, err)
			} else if x.r.Context().Err() == nil {
				x.streamError(sw, "api_error", "mcproxy gateway: the upstream API could not be reached")
			}
			return
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			defer resp.Body.Close()
			if sw == nil {
				_ = copyResponse(x.w, resp)
				return
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			typ, msg := providerError(b)
			x.streamError(sw, typ, msg)
			return
		}
		if sw == nil {
			sw = startStream(x.w, resp)
		}
		if !final {
			sw.hold(t.Nudge != "")
		}
		first := next // the round's first client index, restored if it is dropped
		var rd round
		if x.p.api == anthropicAPI {
			rd = x.pumpAnthropic(sw, resp.Body, n, &next)
		} else {
			rd = x.pumpOpenAI(sw, resp.Body, &streamID, &next)
		}
		resp.Body.Close()
		if !rd.ok || sw.err != nil {
			return
		}
		x.usage.add(marshal(rd.usage))
		if len(rd.hidden) > 0 {
			calls, err := x.run(rd.hidden)
			if err != nil {
				return // the client is gone
			}
			if !rd.client && !final {
				delivered := !sw.holding
				if !delivered {
					sw.drop()
					next = first
				}
				x.keep(calls, rd.message, delivered)
				continue
			}
		}
		sw.release()
		x.close(sw, rd)
		return
	}
}

// delivers reports whether the client gets what a hidden round of turn t
// wrote beside its calls, wrote reporting whether that holds text: only
// when noa did not ask for a compression in it (see runStream).
func delivers(t Turn, wrote bool) bool { return t.Nudge == "" && wrote }

// providerError reads the type and message of a provider error body.
func providerError(b []byte) (string, string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Type == "" {
		return "api_error", "mcproxy gateway: the upstream API failed mid-answer: " + strings.TrimSpace(string(b))
	}
	return e.Error.Type, e.Error.Message
}

// close sends the last round's closing events, usage summed.
func (x *exchange) close(sw *streamWriter, rd round) {
	if x.p.api == anthropicAPI {
		d := object(rd.held)
		d["usage"] = x.usage.apply(marshal(rd.usage))
		sw.event("message_delta", marshal(d))
		sw.event("message_stop", []byte(`{"type":"message_stop"}`))
		return
	}
	if rd.held != nil {
		sw.event("", rd.held)
	}
	if x.clientIncludeUsage && rd.usageCh != nil {
		c := object(rd.usageCh)
		c["usage"] = x.usage.apply(c["usage"])
		sw.event("", marshal(c))
	}
	sw.event("", []byte("[DONE]"))
}

// pumpAnthropic passes one Messages stream on. Blocks are renumbered from
// *next; the gateway's own tool_use blocks are held back; message_start is
// sent in the first round only; message_delta and message_stop are held
// for close.
func (x *exchange) pumpAnthropic(sw *streamWriter, body io.Reader, n int, next *int) round {
	rd := round{usage: map[string]json.RawMessage{}}
	sr := x.g.newSSEReader(body)
	clientIdx := map[int]int{}
	hidden := map[int]bool{}
	blocks := map[int]map[string]json.RawMessage{}
	text := map[int]*strings.Builder{}
	var order []int
	for {
		ev, ok := x.nextEvent(sr, sw)
		if !ok {
			return rd
		}
		var e struct {
			Type    string                          `json:"type"`
			Index   int                             `json:"index"`
			Message struct{ Usage json.RawMessage } `json:"message"`
			Block   map[string]json.RawMessage      `json:"content_block"`
			Delta   map[string]json.RawMessage      `json:"delta"`
			Usage   map[string]json.RawMessage      `json:"usage"`
		}
		if firstByte([]byte(ev.data)) != '{' || json.Unmarshal([]byte(ev.data), &e) != nil {
			x.malformed(sw, fmt.Sprintf("a %q event whose data is not a JSON object of the Messages API", ev.name[:min(len(ev.name), 40)]))
			return rd
		}
		_, open := blocks[e.Index]
		if !open && (e.Type == "content_block_delta" || e.Type == "content_block_stop") {
			x.malformed(sw, fmt.Sprintf("%s for index %d, which no content_block_start opened", e.Type, e.Index))
			return rd
		}
		// renumbered re-encodes ev with the client's block index.
		renumbered := func(ci int) []byte {
			if ci == e.Index {
				return ev.raw
			}
			m := object(json.RawMessage(ev.data))
			m["index"] = marshal(ci)
			var b bytes.Buffer
			b.WriteString("event: " + ev.name + "\ndata: ")
			b.Write(marshal(m))
			b.WriteString("\n\n")
			return b.Bytes()
		}
		switch e.Type {
		case "message_start":
			for k, v := range object(e.Message.Usage) {
				rd.usage[k] = v
			}
			if n == 0 {
				sw.now(ev.raw) // it carries no content, and starts the answer
			}
		case "content_block_start":
			if open || e.Block == nil {
				x.malformed(sw, fmt.Sprintf("content_block_start for index %d is a second one or has no content_block", e.Index))
				return rd
			}
			blocks[e.Index] = e.Block
			text[e.Index] = &strings.Builder{}
			order = append(order, e.Index)
			var typ, name string
			_ = json.Unmarshal(e.Block["type"], &typ)
			_ = json.Unmarshal(e.Block["name"], &name)
			if typ == "tool_use" && x.ours[name] {
				hidden[e.Index] = true
				continue
			}
			switch typ {
			case "tool_use":
				rd.client = true
				sw.release() // the round goes to the client
			case "text":
				sw.text()
			}
			clientIdx[e.Index] = *next
			*next++
			sw.raw(renumbered(clientIdx[e.Index]))
		case "content_block_delta":
			var dt, s string
			_ = json.Unmarshal(e.Delta["type"], &dt)
			b := blocks[e.Index]
			switch dt {
			case "text_delta":
				_ = json.Unmarshal(e.Delta["text"], &s)
				text[e.Index].WriteString(s)
			case "thinking_delta":
				_ = json.Unmarshal(e.Delta["thinking"], &s)
				text[e.Index].WriteString(s)
			case "input_json_delta":
				_ = json.Unmarshal(e.Delta["partial_json"], &s)
				text[e.Index].WriteString(s)
			case "signature_delta":
				if b != nil {
					b["signature"] = e.Delta["signature"]
				}
			}
			if !hidden[e.Index] {
				sw.raw(renumbered(clientIdx[e.Index]))
			}
		case "content_block_stop":
			if !hidden[e.Index] {
				sw.raw(renumbered(clientIdx[e.Index]))
			}
		case "message_delta":
			for k, v := range e.Usage {
				rd.usage[k] = v
			}
			rd.held = []byte(ev.data)
		case "message_stop":
			rd.message = anthropicMessage(order, blocks, text)
			for _, i := range order {
				if hidden[i] {
					var id, name string
					_ = json.Unmarshal(blocks[i]["id"], &id)
					_ = json.Unmarshal(blocks[i]["name"], &name)
					rd.hidden = append(rd.hidden, hiddenCall{id: id, name: name, args: compactJSON(json.RawMessage(orEmpty(text[i].String())))})
				}
			}
			if rd.held == nil {
				x.malformed(sw, "message_stop without a message_delta before it")
				return rd
			}
			rd.ok = true
			return rd
		case "error":
			// Re-encoded rather than passed on: the client reads an error
			// only from an event named error whose data is the Messages
			// API's error object, which the upstream's need not be.
			typ, msg := providerError([]byte(ev.data))
			writeStreamError(sw, x.p.api, typ, msg)
			return rd
		case "ping":
			sw.now(ev.raw) // keeps a held stream's connection alive
		default: // events yet to come
			sw.raw(ev.raw)
		}
	}
}

// isNil reports a JSON null decoded in place of an object.
func isNil(m map[string]json.RawMessage) bool { return m == nil }

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// anthropicMessage rebuilds the assistant message a stream carried, for the
// continuation.
func anthropicMessage(order []int, blocks map[int]map[string]json.RawMessage, text map[int]*strings.Builder) json.RawMessage {
	content := make([]json.RawMessage, 0, len(order))
	for _, i := range order {
		b := blocks[i]
		var typ string
		_ = json.Unmarshal(b["type"], &typ)
		switch typ {
		case "text":
			b["text"] = rawString(text[i].String())
		case "thinking":
			b["thinking"] = rawString(text[i].String())
		case "tool_use":
			in := json.RawMessage(orEmpty(text[i].String()))
			if !json.Valid(in) {
				in = json.RawMessage("{}")
			}
			b["input"] = in
		}
		content = append(content, marshal(b))
	}
	return marshal(map[string]any{"role": "assistant", "content": content})
}

// pumpOpenAI passes one Chat Completions stream on: chunks get the first
// round's id, tool call deltas of the gateway's tools are held back and the
// client's renumbered from *next; the finish chunk, the usage chunk and
// [DONE] are held for close.
func (x *exchange) pumpOpenAI(sw *streamWriter, body io.Reader, streamID *string, next *int) round {
	rd := round{usage: map[string]json.RawMessage{}}
	sr := x.g.newSSEReader(body)
	type callAcc struct {
		hidden   bool
		clientIx int
		id, name string
		args     strings.Builder
	}
	calls := map[int]*callAcc{}
	var callOrder []int
	var content strings.Builder
	for {
		ev, ok := x.nextEvent(sr, sw)
		if !ok {
			return rd
		}
		if ev.data == "[DONE]" {
			break
		}
		var c map[string]json.RawMessage
		if firstByte([]byte(ev.data)) != '{' || json.Unmarshal([]byte(ev.data), &c) != nil {
			x.malformed(sw, "a chunk that is not a JSON object")
			return rd
		}
		if len(c) == 0 || c["error"] != nil {
			if c["error"] != nil {
				sw.drop()
				sw.raw(ev.raw)
				return rd
			}
			sw.raw(ev.raw)
			continue
		}
		var id string
		_ = json.Unmarshal(c["id"], &id)
		if *streamID == "" {
			*streamID = id
		}
		changed := id != *streamID
		c["id"] = rawString(*streamID)
		var choices []map[string]json.RawMessage
		if ch := c["choices"]; len(ch) > 0 && (json.Unmarshal(ch, &choices) != nil || slices.ContainsFunc(choices, isNil)) {
			x.malformed(sw, "a chunk whose choices are not an array of objects")
			return rd
		}
		if len(choices) == 0 {
			if u := c["usage"]; len(u) > 0 && string(u) != "null" {
				for k, v := range object(u) {
					rd.usage[k] = v
				}
				rd.usageCh = marshal(c)
				continue
			}
			sw.event("", marshal(c))
			continue
		}
		ch := choices[0]
		delta := object(ch["delta"])
		var s string
		if json.Unmarshal(delta["content"], &s) == nil {
			content.WriteString(s)
			if s != "" {
				sw.text()
			}
		}
		if tcs := delta["tool_calls"]; len(tcs) > 0 {
			var entries []map[string]json.RawMessage
			if json.Unmarshal(tcs, &entries) != nil || slices.ContainsFunc(entries, isNil) {
				x.malformed(sw, "a delta whose tool_calls are not an array of objects")
				return rd
			}
			var keep []json.RawMessage
			for _, en := range entries {
				var i int
				if ix, ok := en["index"]; ok && json.Unmarshal(ix, &i) != nil {
					x.malformed(sw, "a tool call delta whose index is not a whole number")
					return rd
				}
				tc := decodeToolCall(marshal(en))
				acc, seen := calls[i]
				if !seen {
					acc = &callAcc{hidden: x.ours[tc.Function.Name], id: tc.ID, name: tc.Function.Name}
					calls[i] = acc
					callOrder = append(callOrder, i)
					if !acc.hidden {
						rd.client = true
						acc.clientIx = *next
						*next++
						sw.release() // the round goes to the client
					}
				}
				acc.args.WriteString(tc.Function.Arguments)
				if acc.hidden {
					continue
				}
				en["index"] = marshal(acc.clientIx)
				keep = append(keep, marshal(en))
			}
			changed = true
			if len(keep) > 0 {
				delta["tool_calls"] = marshal(keep)
			} else {
				delete(delta, "tool_calls")
			}
			ch["delta"] = marshal(delta)
		}
		if f := ch["finish_reason"]; len(f) > 0 && string(f) != "null" {
			if u := c["usage"]; len(u) > 0 && string(u) != "null" {
				for k, v := range object(u) {
					rd.usage[k] = v
				}
			}
			choices[0] = ch
			c["choices"] = marshal(choices)
			rd.held = marshal(c)
			continue
		}
		if len(delta) == 0 && changed {
			continue // a chunk that held only the gateway's tool calls
		}
		choices[0] = ch
		c["choices"] = marshal(choices)
		if changed {
			sw.event("", marshal(c))
		} else {
			sw.raw(ev.raw)
		}
	}
	var ours []any
	for _, i := range callOrder {
		acc := calls[i]
		if acc.hidden {
			rd.hidden = append(rd.hidden, hiddenCall{id: acc.id, name: acc.name, args: acc.args.String()})
			ours = append(ours, map[string]any{"id": acc.id, "type": "function", "function": map[string]any{"name": acc.name, "arguments": acc.args.String()}})
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": ours}
	if content.Len() > 0 {
		msg["content"] = content.String()
	}
	rd.message = marshal(msg)
	if len(rd.hidden) > 0 && !rd.client && rd.held != nil {
		// The client sees no tool call: its answer ended as a plain stop.
		c := object(rd.held)
		var choices []map[string]json.RawMessage
		_ = json.Unmarshal(c["choices"], &choices)
		if len(choices) > 0 {
			choices[0]["finish_reason"] = rawString("stop")
			c["choices"] = marshal(choices)
			rd.held = marshal(c)
		}
	}
	rd.ok = rd.held != nil
	if !rd.ok {
		x.streamError(sw, "api_error", "mcproxy gateway: the upstream stream ended without a finish_reason")
	}
	return rd
}
