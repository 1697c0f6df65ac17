package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// URL is the Messages API endpoint to send to, e.g.
	// http://127.0.0.1:8765/v1/messages.
	URL string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Header is added to every request (an API key, a session name).
	Header map[string]string
	// Model and System are the request's; MaxTokens defaults to 1024.
	Model     string
	System    string
	MaxTokens int
	// CacheControl marks prompt cache breakpoints the way Claude Code does:
	// on the system prompt and on the last block of the last message.
	CacheControl bool
	// MaxRequestsPerStep bounds the requests one step may take (default:
	// the step's files plus 4); a model that keeps calling tools past it
	// fails the replay.
	MaxRequestsPerStep int
	// OnRequest, when set, is called after every request. What it is
	// handed is not kept after it returns, and must not be changed.
	OnRequest func(ReplayRequest)
}

// ReplayRequest is one request of a replay, as the client sent it.
type ReplayRequest struct {
	// Step is the index of the scenario step the request belongs to.
	Step int
	// Body is the request (the whole conversation so far); Answer the
	// answer's body (an error body when Err is set).
	Body, Answer []byte
	// Messages are the conversation's messages as the client keeps them
	// (without the cache breakpoint Body adds): earlier requests' messages
	// are a prefix of them.
	Messages []json.RawMessage
	Err      error
}

// StepResult is how one step of a replay went.
type StepResult struct {
	// Requests is how many model requests the step took.
	Requests int
	// Answer is the text of the step's final answer.
	Answer string
	// Answered reports, for a question, whether the answer holds the
	// planted "KEY = value".
	Answered bool
}

// readFileTool is the one tool the replayed client offers.
var readFileTool = json.RawMessage(`{"name":"read_file","description":"Read a file and return its whole content.","input_schema":{"type":"object","properties":{"path":{"type":"string","description":"Absolute path of the file."}},"required":["path"]}}`)

// Replay plays the user and the tools of sc against the Messages API at
// opts.URL, step by step: the user's message, then the model's tool calls
// answered with the files they ask for, until the model answers in text.
// The client keeps the whole conversation and sends it every time, as
// agents do. A model error (any status but 200) ends the replay.
func Replay(ctx context.Context, sc *Scenario, opts ReplayOptions) ([]StepResult, error) {
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = 1024
	}
	var msgs []json.RawMessage
	results := make([]StepResult, len(sc.Steps))
	for i, st := range sc.Steps {
		msgs = append(msgs, marshalJSON(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": st.Text}}}))
		limit := opts.MaxRequestsPerStep
		if limit == 0 {
			limit = len(st.Files) + 4
		}
		for {
			if results[i].Requests == limit {
				return results, fmt.Errorf("step %d took more than %d requests (MaxRequestsPerStep)", i, limit)
			}
			results[i].Requests++
			body := opts.body(msgs)
			answer, err := opts.send(ctx, body)
			if opts.OnRequest != nil {
				opts.OnRequest(ReplayRequest{Step: i, Body: body, Answer: answer, Messages: msgs, Err: err})
			}
			if err != nil {
				return results, fmt.Errorf("step %d: %w", i, err)
			}
			var a struct {
				Content []json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(answer, &a); err != nil {
				return results, fmt.Errorf("step %d: reading the answer: %w", i, err)
			}
			msgs = append(msgs, marshalJSON(map[string]any{"role": "assistant", "content": a.Content}))
			var toolResults []any
			text := ""
			for _, raw := range a.Content {
				var b struct {
					Type  string `json:"type"`
					Text  string `json:"text"`
					ID    string `json:"id"`
					Name  string `json:"name"`
					Input struct {
						Path string `json:"path"`
					} `json:"input"`
				}
				_ = json.Unmarshal(raw, &b)
				switch b.Type {
				case "text":
					text += b.Text
				case "tool_use":
					res := map[string]any{"type": "tool_result", "tool_use_id": b.ID}
					content, ok := sc.File(b.Input.Path)
					switch {
					case b.Name != "read_file":
						res["content"], res["is_error"] = "no tool named "+b.Name+"; the only tool is read_file", true
					case !ok:
						res["content"], res["is_error"] = "no such file: "+b.Input.Path, true
					default:
						res["content"] = content
					}
					toolResults = append(toolResults, res)
				}
			}
			if len(toolResults) > 0 {
				msgs = append(msgs, marshalJSON(map[string]any{"role": "user", "content": toolResults}))
				continue
			}
			results[i].Answer = text
			results[i].Answered = st.Question() && strings.Contains(text, st.Want)
			break
		}
	}
	return results, nil
}

// body is the request for msgs.
func (o *ReplayOptions) body(msgs []json.RawMessage) []byte {
	system := any(o.System)
	out := msgs
	if o.CacheControl {
		system = []any{map[string]any{"type": "text", "text": o.System, "cache_control": map[string]string{"type": "ephemeral"}}}
		last := map[string]json.RawMessage{}
		_ = json.Unmarshal(msgs[len(msgs)-1], &last)
		var content []map[string]json.RawMessage
		_ = json.Unmarshal(last["content"], &content)
		content[len(content)-1]["cache_control"] = json.RawMessage(`{"type":"ephemeral"}`)
		last["content"] = marshalJSON(content)
		out = append(append([]json.RawMessage(nil), msgs[:len(msgs)-1]...), marshalJSON(last))
	}
	return marshalJSON(map[string]any{"model": o.Model, "max_tokens": o.MaxTokens, "system": system,
		"tools": []json.RawMessage{readFileTool}, "messages": out})
}

func (o *ReplayOptions) send(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	for k, v := range o.Header {
		req.Header.Set(k, v)
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("the model answered %d: %s", resp.StatusCode, b)
	}
	return b, nil
}

func marshalJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gatewaytest: encoding %T: %v", v, err)) // only maps of JSON values are encoded
	}
	return b
}
