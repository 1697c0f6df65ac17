package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// RenderOptions shape a rendered request.
type RenderOptions struct {
	Model     string // zero: the trajectory's Model
	MaxTokens int    // zero: 4096
	Stream    bool   // ask for a streamed answer
}

func (o RenderOptions) withDefaults(t *Trajectory) RenderOptions {
	if o.Model == "" {
		o.Model = t.Model
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 4096
	}
	return o
}

// Requests is the number of requests the run made: one before each step.
func (t *Trajectory) Requests() int { return len(t.Steps) }

// Anthropic Messages API shapes. Field order is fixed and messages come last,
// so a request's bytes up to the end of its last message are a prefix of the
// next request's.
type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	Stream    bool               `json:"stream,omitempty"`
	System    string             `json:"system,omitempty"`
	Tools     []anthropicTool    `json:"tools,omitempty"`
	Messages  []AnthropicMessage `json:"messages"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// AnthropicMessage is one message of a Messages API request.
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

// AnthropicBlock is a text, tool_use or tool_result content block.
type AnthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

// Anthropic renders the Messages API request sent before step k: the system
// prompt, the tools, the task and steps 0..k-1 with their results.
func (t *Trajectory) Anthropic(k int, o RenderOptions) ([]byte, error) {
	return render(t, k, o, t.AnthropicMessages, func(o RenderOptions, msgs []AnthropicMessage) any {
		req := anthropicRequest{Model: o.Model, MaxTokens: o.MaxTokens, Stream: o.Stream, System: t.System, Messages: msgs}
		for _, tool := range t.Tools {
			req.Tools = append(req.Tools, anthropicTool(tool))
		}
		return req
	})
}

// render builds the request for step k from its messages.
func render[M any](t *Trajectory, k int, o RenderOptions, messages func(int) ([]M, error), request func(RenderOptions, []M) any) ([]byte, error) {
	msgs, err := messages(k)
	if err != nil {
		return nil, err
	}
	return marshal(request(o.withDefaults(t), msgs))
}

// AnthropicMessages returns the messages of the request sent before step k.
func (t *Trajectory) AnthropicMessages(k int) ([]AnthropicMessage, error) {
	if err := t.checkStep(k); err != nil {
		return nil, err
	}
	msgs := []AnthropicMessage{{Role: "user", Content: []AnthropicBlock{{Type: "text", Text: t.TaskMessage}}}}
	for i := 0; i < k; i++ {
		msgs = append(msgs, t.AnthropicAssistant(i))
		var user []AnthropicBlock
		for n, r := range t.Steps[i].Results {
			user = append(user, AnthropicBlock{Type: "tool_result", ToolUseID: t.callID("toolu", i, n), Content: r})
		}
		for _, u := range t.Steps[i].User {
			user = append(user, AnthropicBlock{Type: "text", Text: u})
		}
		msgs = append(msgs, AnthropicMessage{Role: "user", Content: user})
	}
	return msgs, nil
}

// AnthropicAssistant is step k's assistant turn as a Messages API message:
// what a scripted model answers to the request for step k.
func (t *Trajectory) AnthropicAssistant(k int) AnthropicMessage {
	s := t.Steps[k]
	var blocks []AnthropicBlock
	if s.Text != "" {
		blocks = append(blocks, AnthropicBlock{Type: "text", Text: s.Text})
	}
	for n, c := range s.Calls {
		blocks = append(blocks, AnthropicBlock{Type: "tool_use", ID: t.callID("toolu", k, n), Name: c.Name, Input: c.Arguments})
	}
	return AnthropicMessage{Role: "assistant", Content: blocks}
}

// OpenAI Chat Completions shapes; as above, messages come last.
type openAIRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream,omitempty"`
	Tools     []openAITool    `json:"tools,omitempty"`
	Messages  []OpenAIMessage `json:"messages"`
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// OpenAIMessage is one message of a Chat Completions request.
type OpenAIMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// OpenAIToolCall is one tool call of an assistant message.
type OpenAIToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function OpenAIFunctionCall `json:"function"`
}

// OpenAIFunctionCall names the function and carries its arguments as the
// JSON text the API expects.
type OpenAIFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// OpenAI renders the Chat Completions request sent before step k.
func (t *Trajectory) OpenAI(k int, o RenderOptions) ([]byte, error) {
	return render(t, k, o, t.OpenAIMessages, func(o RenderOptions, msgs []OpenAIMessage) any {
		req := openAIRequest{Model: o.Model, MaxTokens: o.MaxTokens, Stream: o.Stream, Messages: msgs}
		for _, tool := range t.Tools {
			req.Tools = append(req.Tools, openAITool{Type: "function", Function: openAIFunction{Name: tool.Name, Description: tool.Description, Parameters: tool.InputSchema}})
		}
		return req
	})
}

// OpenAIMessages returns the messages of the Chat Completions request sent
// before step k, the system prompt first.
func (t *Trajectory) OpenAIMessages(k int) ([]OpenAIMessage, error) {
	if err := t.checkStep(k); err != nil {
		return nil, err
	}
	var msgs []OpenAIMessage
	if t.System != "" {
		msgs = append(msgs, OpenAIMessage{Role: "system", Content: t.System})
	}
	msgs = append(msgs, OpenAIMessage{Role: "user", Content: t.TaskMessage})
	for i := 0; i < k; i++ {
		msgs = append(msgs, t.OpenAIAssistant(i))
		for n, r := range t.Steps[i].Results {
			msgs = append(msgs, OpenAIMessage{Role: "tool", Content: r, ToolCallID: t.callID("call", i, n)})
		}
		for _, u := range t.Steps[i].User {
			msgs = append(msgs, OpenAIMessage{Role: "user", Content: u})
		}
	}
	return msgs, nil
}

// OpenAIAssistant is step k's assistant turn as a Chat Completions message.
func (t *Trajectory) OpenAIAssistant(k int) OpenAIMessage {
	s := t.Steps[k]
	m := OpenAIMessage{Role: "assistant", Content: s.Text}
	for n, c := range s.Calls {
		args, err := compact(c.Arguments)
		if err != nil {
			args = string(c.Arguments) // Validate already held it to be an object
		}
		m.ToolCalls = append(m.ToolCalls, OpenAIToolCall{ID: t.callID("call", k, n), Type: "function", Function: OpenAIFunctionCall{Name: c.Name, Arguments: args}})
	}
	return m
}

func (t *Trajectory) checkStep(k int) error {
	if k < 0 || k >= len(t.Steps) {
		return fmt.Errorf("rendering trajectory %q: step %d out of range [0, %d)", t.ID, k, len(t.Steps))
	}
	return nil
}

// callID names call n of step k. It depends only on the trajectory id and
// the position, so the same call has the same id in every request, and the
// calls of a Session's parts never collide.
func (t *Trajectory) callID(prefix string, k, n int) string {
	h := fnv.New32a()
	h.Write([]byte(t.ID))
	return fmt.Sprintf("%s_%08x_%d_%d", prefix, h.Sum32(), k, n)
}

func compact(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// marshal encodes v as a client would send it: compact, and without the
// HTML escaping encoding/json adds by default. Stored runs are written the
// same way (Encode).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
