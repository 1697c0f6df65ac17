package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// Policy names, in report order.
const (
	Straight   = "straight"
	Gateway    = "gateway"
	ClearAt100 = "clear_tool_uses@100K"
	ClearAtLow = "clear_tool_uses@50%"
	Compact95  = "compact@95%"
)

// Policies lists every policy in report order.
var Policies = []string{Straight, Gateway, ClearAt100, ClearAtLow, Compact95}

// Context editing as Anthropic documents clear_tool_uses_20250919: once a
// request's input passes the trigger, the results of every tool use but
// the newest keep are replaced by a placeholder (the calls stay).
const (
	clearTrigger     = 100000
	clearKeep        = 3
	clearPlaceholder = "[cleared]"
	// compactAt is the share of the window at which the client compacts,
	// as Claude Code does.
	compactAt = 0.95
)

// compactPrompt is what the client asks for when it compacts.
const compactPrompt = "Your context is nearly full. Summarise the conversation so far so that the work can continue from the summary alone: the task, what was done, what was found."

// client renders the requests a Claude-Code-like client sends: the system
// prompt as one text block and the last block of the last message each
// with a cache_control breakpoint.
type client struct {
	model  string
	system string
	tools  []json.RawMessage
}

type ccBlock struct {
	trajectory.AnthropicBlock
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type ccMessage struct {
	Role    string    `json:"role"`
	Content []ccBlock `json:"content"`
}

func newClient(t *trajectory.Trajectory, model string) *client {
	c := &client{model: model, system: t.System}
	for _, tool := range t.Tools {
		b, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{tool.Name, tool.Description, tool.InputSchema})
		c.tools = append(c.tools, b)
	}
	return c
}

// body is the request for msgs.
func (c *client) body(msgs []trajectory.AnthropicMessage) []byte {
	out := make([]ccMessage, len(msgs))
	for i, m := range msgs {
		out[i].Role = m.Role
		for _, b := range m.Content {
			out[i].Content = append(out[i].Content, ccBlock{AnthropicBlock: b})
		}
	}
	last := out[len(out)-1].Content
	last[len(last)-1].CacheControl = &cacheControl{"ephemeral"}
	req := struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []ccBlock         `json:"system,omitempty"`
		Tools     []json.RawMessage `json:"tools,omitempty"`
		Messages  []ccMessage       `json:"messages"`
	}{Model: c.model, MaxTokens: 4096, Tools: c.tools, Messages: out}
	if c.system != "" {
		req.System = []ccBlock{{AnthropicBlock: trajectory.AnthropicBlock{Type: "text", Text: c.system}, CacheControl: &cacheControl{"ephemeral"}}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(req) // only strings and raw JSON the trajectory validated
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// run is one trajectory's rendered conversation.
type run struct {
	t      *trajectory.Trajectory
	msgs   []trajectory.AnthropicMessage // every message, the task first
	facts  []trajectory.Fact
	client *client
	output []int // output tokens of each step's assistant turn
}

func newRun(t *trajectory.Trajectory, model string, count *counter) (*run, error) {
	last := len(t.Steps) - 1
	msgs, err := t.AnthropicMessages(last)
	if err != nil {
		return nil, err
	}
	r := &run{t: t, msgs: msgs, facts: t.Facts(), client: newClient(t, model)}
	for k := range t.Steps {
		n := 0
		for _, b := range t.AnthropicAssistant(k).Content {
			n += count.tokens(wireBlock{Text: b.Text, Name: b.Name, Input: b.Input})
		}
		r.output = append(r.output, n)
	}
	return r, nil
}

// at is the messages of the straight request before step k.
func (r *run) at(k int) []trajectory.AnthropicMessage { return r.msgs[:1+2*k] }

// meter accumulates one policy's requests.
type meter struct {
	cache  *cache
	count  *counter
	window int
	res    PolicyResult
	prev   *shape
	turn   bill // the current client turn's bill
}

func newMeter(name string, count *counter, window int) *meter {
	return &meter{cache: newCache(), count: count, window: window, res: PolicyResult{Name: name}}
}

// request measures one model request with output tokens out.
func (m *meter) request(body []byte, out int) error {
	s, err := m.count.shape(body)
	if err != nil {
		return err
	}
	b := m.cache.charge(s)
	b.Output = out
	m.turn.add(b)
	m.res.Requests++
	m.res.InputTokens += int64(s.tokens)
	m.res.Peak = max(m.res.Peak, s.tokens)
	if s.tokens > m.window {
		m.res.OverWindow++
	}
	if m.prev != nil {
		m.res.PrefixPairs++
		if stable(*m.prev, s) {
			m.res.PrefixStable++
		}
	}
	m.prev = &s
	return nil
}

// stable reports whether next starts with prev's prompt up to prev's last
// breakpoint (all of prev when it has none).
func stable(prev, next shape) bool {
	n := len(prev.units)
	for i := len(prev.units) - 1; i >= 0; i-- {
		if prev.units[i].mark {
			n = i + 1
			break
		}
	}
	if n == 0 {
		return true
	}
	return len(next.units) >= n && next.units[n-1].prefix == prev.units[n-1].prefix
}

// endTurn closes a client turn.
func (m *meter) endTurn() {
	m.res.bill.add(m.turn)
	m.res.turns = append(m.res.turns, m.turn)
	m.turn = bill{}
}

// facts records, for a policy that cannot read anything back, whether the
// request before each fact's step shows it.
func factsInView(res *PolicyResult, facts []trajectory.Fact, body func(k int) []byte) {
	for _, f := range facts {
		if bytes.Contains(body(f.Needed), []byte(f.Text)) {
			res.FactsInView++
		} else {
			res.FactsLost++
		}
	}
}

// straight sends the run's requests as the client built them.
func (r *run) straight(m *meter) error {
	for k := range r.t.Steps {
		if err := m.request(r.client.body(r.at(k)), r.output[k]); err != nil {
			return err
		}
		m.endTurn()
	}
	factsInView(&m.res, r.facts, func(k int) []byte { return r.client.body(r.at(k)) })
	return nil
}

// cleared is msgs with the results of every tool use but the newest keep
// replaced by the placeholder: what the model reads under context editing.
func cleared(msgs []trajectory.AnthropicMessage, keep int) []trajectory.AnthropicMessage {
	kept := map[string]bool{}
	for i := len(msgs) - 1; i >= 0 && len(kept) < keep; i-- {
		c := msgs[i].Content
		for j := len(c) - 1; j >= 0 && len(kept) < keep; j-- {
			if c[j].Type == "tool_use" {
				kept[c[j].ID] = true
			}
		}
	}
	out := make([]trajectory.AnthropicMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
		copied := false // msgs is the run's own: never written
		for j, b := range m.Content {
			if b.Type != "tool_result" || kept[b.ToolUseID] {
				continue
			}
			if !copied {
				out[i].Content = append([]trajectory.AnthropicBlock(nil), m.Content...)
				copied = true
			}
			out[i].Content[j].Content = clearPlaceholder
		}
	}
	return out
}

// clear sends the run's requests with context editing at trigger tokens:
// the trigger is checked against the whole request, as the API does.
func (r *run) clear(m *meter, trigger int) error {
	body := func(k int) []byte {
		full := r.client.body(r.at(k))
		s, err := m.count.shape(full)
		if err != nil || s.tokens <= trigger {
			return full
		}
		return r.client.body(cleared(r.at(k), clearKeep))
	}
	for k := range r.t.Steps {
		if err := m.request(body(k), r.output[k]); err != nil {
			return err
		}
		m.endTurn()
	}
	factsInView(&m.res, r.facts, body)
	return nil
}

// compact sends the run's requests as a client that compacts its own
// conversation does: before a request over compactAt of the window it
// asks for a summary of everything so far (the same request with the
// instruction added to its last message), then starts again from the
// task and the summary.
func (r *run) compact(m *meter, log func(k int) string) error {
	from, summary := 0, "" // the step the current conversation starts at
	msgs := func(k int) []trajectory.AnthropicMessage {
		if from == 0 {
			return r.at(k)
		}
		task := trajectory.AnthropicMessage{Role: "user", Content: []trajectory.AnthropicBlock{
			{Type: "text", Text: r.t.TaskMessage}, {Type: "text", Text: summary}}}
		return append([]trajectory.AnthropicMessage{task}, r.msgs[1+2*from:1+2*k]...)
	}
	bodies := make([][]byte, len(r.t.Steps))
	for k := range r.t.Steps {
		body := r.client.body(msgs(k))
		s, err := m.count.shape(body)
		if err != nil {
			return err
		}
		if k > from && float64(s.tokens) > compactAt*float64(m.window) {
			ask := msgs(k)
			lastMsg := ask[len(ask)-1]
			lastMsg.Content = append(append([]trajectory.AnthropicBlock(nil), lastMsg.Content...), trajectory.AnthropicBlock{Type: "text", Text: compactPrompt})
			ask = append(append([]trajectory.AnthropicMessage(nil), ask[:len(ask)-1]...), lastMsg)
			var lines []string
			for i := 0; i < k; i++ {
				lines = append(lines, log(i))
			}
			summary = boundedLog(fmt.Sprintf("Summary of the conversation so far (compacted), steps 0–%d:\n", k-1), lines, maxCompactChars)
			if err := m.request(r.client.body(ask), m.count.text(summary)); err != nil {
				return err
			}
			m.res.Compactions++
			from = k
			body = r.client.body(msgs(k))
		}
		bodies[k] = body
		if err := m.request(body, r.output[k]); err != nil {
			return err
		}
		m.endTurn()
	}
	factsInView(&m.res, r.facts, func(k int) []byte { return bodies[k] })
	return nil
}

func (r *run) String() string { return fmt.Sprintf("%s (%d steps)", r.t.ID, len(r.t.Steps)) }
