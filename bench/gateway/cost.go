package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A request as a provider's prompt cache sees it: its units in prompt
// order (each tool, each system block, then each message's role and
// content blocks), each with its tokens, the hash of the prompt up to and
// including it, and whether it carries a cache_control breakpoint. A unit
// is hashed as its canonical JSON without cache_control: the marker moves
// from request to request, the prompt does not.
type shape struct {
	units  []unit
	tokens int
}

type unit struct {
	prefix [32]byte // hash of every unit up to and including this one
	tokens int
	mark   bool
}

// bill is what one request costs, in tokens of each kind.
type bill struct {
	Read, Write, Input, Output int
}

func (b *bill) add(o bill) {
	b.Read += o.Read
	b.Write += o.Write
	b.Input += o.Input
	b.Output += o.Output
}

// usd prices b with p (USD per million tokens).
func (b bill) usd(p config.ModelPrices) float64 {
	return (float64(b.Read)*p.CacheRead + float64(b.Write)*p.CacheWrite + float64(b.Input)*p.Input + float64(b.Output)*p.Output) / 1e6
}

// cache is one conversation's prompt cache at the provider, by Anthropic's
// rules as the bench reads them: a request's breakpoint writes the prompt
// up to it; a later request reads the longest prefix, ending at a unit
// boundary not past its own last breakpoint, that an earlier request
// wrote; the rest up to its last breakpoint is written, and what follows
// is uncached input. Entries never expire (a replay runs faster than the
// 5-minute lifetime) and prefixes below the minimum cacheable length are
// cached too; the 20-block lookback is not modelled.
type cache struct {
	written map[[32]byte]bool
}

func newCache() *cache { return &cache{written: map[[32]byte]bool{}} }

// charge bills s, then records what it wrote. It also returns how many
// leading tokens were read from the cache.
func (c *cache) charge(s shape) bill {
	last := -1
	for i, u := range s.units {
		if u.mark {
			last = i
		}
	}
	if last < 0 {
		return bill{Input: s.tokens}
	}
	read := 0 // units read
	for i := last; i >= 0; i-- {
		if c.written[s.units[i].prefix] {
			read = i + 1
			break
		}
	}
	var b bill
	for i, u := range s.units {
		switch {
		case i < read:
			b.Read += u.tokens
		case i <= last:
			b.Write += u.tokens
		default:
			b.Input += u.tokens
		}
		if u.mark {
			c.written[u.prefix] = true
		}
	}
	return b
}

// counter counts tokens, memoised by content: the same block is sent on
// every request after its first.
type counter struct {
	count func(string) int
	memo  map[[32]byte]int
}

func newCounter(count func(string) int) *counter {
	return &counter{count: count, memo: map[[32]byte]int{}}
}

func (c *counter) text(s string) int {
	k := sha256.Sum256([]byte(s))
	if n, ok := c.memo[k]; ok {
		return n
	}
	n := c.count(s)
	c.memo[k] = n
	return n
}

// wireBlock is the part of a content block, tool or system block the
// bench counts: the text the model reads, not the JSON around it.
type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Input        json.RawMessage `json:"input"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// tokens counts a unit: a text block's text, a tool call's name and
// arguments, a tool result's text (its inner blocks' texts), a tool's
// name, description and schema. Each piece is counted alone, so the sum
// over a request is the same however its units are split.
func (c *counter) tokens(b wireBlock) int {
	n := 0
	for _, s := range []string{b.Text, b.Name, b.Description, string(b.InputSchema), string(b.Input)} {
		if s != "" {
			n += c.text(s)
		}
	}
	if len(b.Content) > 0 {
		for _, inner := range contentBlocks(b.Content) {
			var t wireBlock
			_ = json.Unmarshal(inner, &t)
			if t.Text != "" {
				n += c.text(t.Text)
			}
		}
	}
	return n
}

// shape cuts a Messages API body into cache units.
func (c *counter) shape(body []byte) (shape, error) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return shape{}, fmt.Errorf("reading a request: %w", err)
	}
	var s shape
	h := sha256.New()
	add := func(raw []byte, tokens int, mark bool) {
		h.Write(raw)
		var u unit
		copy(u.prefix[:], h.Sum(nil))
		u.tokens, u.mark = tokens, mark
		s.units = append(s.units, u)
		s.tokens += tokens
	}
	unitOf := func(raw json.RawMessage) error {
		var b wireBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return err
		}
		canon, err := canonical(raw)
		if err != nil {
			return err
		}
		add(canon, c.tokens(b), len(b.CacheControl) > 0 && string(b.CacheControl) != "null")
		return nil
	}
	for _, t := range req.Tools {
		if err := unitOf(t); err != nil {
			return shape{}, fmt.Errorf("reading a tool: %w", err)
		}
	}
	for _, b := range contentBlocks(req.System) {
		if err := unitOf(b); err != nil {
			return shape{}, fmt.Errorf("reading the system prompt: %w", err)
		}
	}
	for i, m := range req.Messages {
		add([]byte("\x00role:"+m.Role), 0, false)
		for _, b := range contentBlocks(m.Content) {
			if err := unitOf(b); err != nil {
				return shape{}, fmt.Errorf("reading messages[%d]: %w", i, err)
			}
		}
	}
	return s, nil
}

// contentBlocks is a content or system value as blocks: a string is one
// text block, null none.
func contentBlocks(raw json.RawMessage) []json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}
	}
	var out []json.RawMessage
	_ = json.Unmarshal(raw, &out)
	return out
}

// canonical is raw with object keys sorted and cache_control dropped at
// every level, and a separator, so units hash apart.
func canonical(raw json.RawMessage) ([]byte, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(dropCacheControl(v))
	if err != nil {
		return nil, err
	}
	return append(b, 0), nil
}

func dropCacheControl(v any) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "cache_control")
		for k, e := range t {
			t[k] = dropCacheControl(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropCacheControl(e)
		}
	}
	return v
}
