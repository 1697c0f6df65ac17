package gatewaytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	Name string // the event: line; empty when there is none
	Data string
}

// ParseSSE splits a text/event-stream body into events, strictly: every
// line is "event: ...", "data: ..." or a comment (":..."), every event ends
// with a blank line, and the body ends at an event's end. Lines may end in
// \n or \r\n.
func ParseSSE(body []byte) ([]Event, error) {
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	if text == "" {
		return nil, nil
	}
	if !strings.HasSuffix(text, "\n\n") {
		return nil, fmt.Errorf("the stream does not end with a blank line (a cut event): ends %q", tail(text))
	}
	var out []Event
	for i, block := range strings.Split(strings.TrimSuffix(text, "\n\n"), "\n\n") {
		var ev Event
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				if ev.Name != "" {
					return nil, fmt.Errorf("event %d has two event lines", i)
				}
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			default:
				return nil, fmt.Errorf("event %d has a line that is not event:, data: or a comment: %q", i, line)
			}
		}
		if len(data) == 0 {
			if ev.Name != "" {
				return nil, fmt.Errorf("event %d (%s) has no data", i, ev.Name)
			}
			continue // a comment-only block (keep-alive)
		}
		ev.Data = strings.Join(data, "\n")
		out = append(out, ev)
	}
	return out, nil
}

func tail(s string) string {
	if len(s) > 60 {
		return s[len(s)-60:]
	}
	return s
}

// CheckAnthropicStream checks a Messages API stream as a client relies on
// it: every event's name equals its data's type and its data is a JSON
// object; one message_start first; content blocks start at index 0 and
// count up, each opened before its deltas, deltas matching its type
// (text_delta for text, input_json_delta for tool_use, whose pieces join
// into valid JSON, thinking_delta/signature_delta for thinking), and closed
// before the next opens; one message_delta after the last block; message_stop
// last. An error event ends the stream early and is reported as an error.
func CheckAnthropicStream(body []byte) error {
	events, err := ParseSSE(body)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("empty stream")
	}
	open, next := -1, 0
	var blockType string
	var args strings.Builder
	sawDelta, sawStop := false, false
	for i, ev := range events {
		var d struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
			Block struct {
				Type string `json:"type"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			return fmt.Errorf("event %d (%s): data is not a JSON object: %v", i, ev.Name, err)
		}
		if ev.Name != d.Type {
			return fmt.Errorf("event %d: name %q but data type %q", i, ev.Name, d.Type)
		}
		if sawStop {
			return fmt.Errorf("event %d (%s) after message_stop", i, d.Type)
		}
		if (i == 0) != (d.Type == "message_start") {
			return fmt.Errorf("event %d is %s: want one message_start, first", i, d.Type)
		}
		switch d.Type {
		case "message_start", "ping":
		case "error":
			return fmt.Errorf("error event: %s", d.Error)
		case "content_block_start":
			if d.Index == nil || *d.Index != next || open >= 0 || sawDelta {
				return fmt.Errorf("event %d: content_block_start index %v, want %d with no block open", i, d.Index, next)
			}
			open, blockType = next, d.Block.Type
			next++
			args.Reset()
		case "content_block_delta":
			if d.Index == nil || *d.Index != open {
				return fmt.Errorf("event %d: delta for block %v, but the open block is %d", i, d.Index, open)
			}
			want := map[string][]string{"text": {"text_delta", "citations_delta"}, "tool_use": {"input_json_delta"},
				"server_tool_use": {"input_json_delta"}, "thinking": {"thinking_delta", "signature_delta"}}[blockType]
			if !slices.Contains(want, d.Delta.Type) {
				return fmt.Errorf("event %d: %s in a %s block", i, d.Delta.Type, blockType)
			}
			args.WriteString(d.Delta.PartialJSON)
		case "content_block_stop":
			if d.Index == nil || *d.Index != open {
				return fmt.Errorf("event %d: content_block_stop for %v, but the open block is %d", i, d.Index, open)
			}
			if blockType == "tool_use" && args.Len() > 0 && !json.Valid([]byte(args.String())) {
				return fmt.Errorf("event %d: tool_use block %d's input pieces join to invalid JSON %q", i, open, args.String())
			}
			open = -1
		case "message_delta":
			if open >= 0 || sawDelta {
				return fmt.Errorf("event %d: message_delta with block %d open or after another", i, open)
			}
			sawDelta = true
		case "message_stop":
			if !sawDelta {
				return fmt.Errorf("event %d: message_stop before message_delta", i)
			}
			sawStop = true
		default:
			return fmt.Errorf("event %d: unknown event type %q", i, d.Type)
		}
	}
	if !sawStop {
		return fmt.Errorf("the stream ends without message_stop")
	}
	return nil
}

// CheckOpenAIStream checks a Chat Completions stream: data-only events,
// each a JSON chunk object of one id, then "[DONE]" last; tool call deltas
// name a call's id and function name when they first show an index; a chunk
// with a usage object, if any, comes after the one with a finish_reason.
func CheckOpenAIStream(body []byte) error {
	events, err := ParseSSE(body)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[len(events)-1].Data != "[DONE]" {
		return fmt.Errorf("the stream does not end with data: [DONE]")
	}
	var id string
	seen := map[int]bool{}
	finished := false
	for i, ev := range events[:len(events)-1] {
		if ev.Name != "" {
			return fmt.Errorf("event %d has an event line %q; chat completion chunks are data-only", i, ev.Name)
		}
		var c struct {
			ID      string          `json:"id"`
			Object  string          `json:"object"`
			Usage   json.RawMessage `json:"usage"`
			Error   json.RawMessage `json:"error"`
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			return fmt.Errorf("chunk %d is not JSON: %v", i, err)
		}
		if len(c.Error) > 0 {
			return fmt.Errorf("error chunk: %s", c.Error)
		}
		if c.Object != "chat.completion.chunk" {
			return fmt.Errorf("chunk %d: object %q, want chat.completion.chunk", i, c.Object)
		}
		if id == "" {
			id = c.ID
		} else if c.ID != id {
			return fmt.Errorf("chunk %d: id %q differs from the stream's %q", i, c.ID, id)
		}
		if len(c.Usage) > 0 && !bytes.Equal(c.Usage, []byte("null")) && !finished {
			return fmt.Errorf("chunk %d: usage before the finish_reason", i)
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finished = true
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					return fmt.Errorf("chunk %d: a tool call delta without index", i)
				}
				if !seen[*tc.Index] {
					if tc.ID == "" || tc.Function.Name == "" {
						return fmt.Errorf("chunk %d: tool call %d first shows without its id and name", i, *tc.Index)
					}
					seen[*tc.Index] = true
				}
			}
		}
	}
	if !finished {
		return fmt.Errorf("no chunk carries a finish_reason")
	}
	return nil
}
