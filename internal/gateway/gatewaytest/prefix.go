package gatewaytest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// NudgeMarker starts every nudge noa renders (noa.RenderNudgeText: "[noa]
// Context at N% of the window."). The gateway adds the nudge after the
// client's last message, so it is never part of a cached prefix.
const NudgeMarker = "[noa] Context at"

// Prefix is a forwarded request cut into the units a provider's prompt
// cache matches on, in prompt order: each tool, each system block, then for
// every message its role and each content block (Anthropic), or every
// message whole (OpenAI, whose cache matches the prompt's prefix at any
// point). A unit is its canonical JSON (keys sorted, cache_control dropped:
// the marker moves from request to request, the prompt does not), kept as
// a hash. A string content counts as one text block, which is the same
// prompt.
type Prefix struct {
	units [][32]byte
	// breakpoint is the index of the last unit carrying cache_control, -1
	// when there is none.
	breakpoint int
	// end is the number of units up to the last message the client sent:
	// a trailing nudge is the gateway's, left out.
	end int
}

// RequestPrefix cuts a recorded request's body into cache units, reading
// it as the API its path names.
func RequestPrefix(r *scriptedmodel.Request) (Prefix, error) {
	return ParsePrefix(r.Body, strings.HasSuffix(r.Path, "/chat/completions"))
}

// ParsePrefix cuts a Messages API body (openai false) or a Chat Completions
// body into cache units.
func ParsePrefix(body []byte, openai bool) (Prefix, error) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return Prefix{}, fmt.Errorf("reading the request: %w", err)
	}
	p := Prefix{breakpoint: -1}
	add := func(raw json.RawMessage) error {
		c, marked, err := canonicalUnit(raw)
		if err != nil {
			return err
		}
		if marked {
			p.breakpoint = len(p.units)
		}
		p.units = append(p.units, sha256.Sum256(c))
		return nil
	}
	for _, t := range req.Tools {
		if err := add(t); err != nil {
			return Prefix{}, fmt.Errorf("reading a tool: %w", err)
		}
	}
	for _, b := range blocks(req.System) {
		if err := add(b); err != nil {
			return Prefix{}, fmt.Errorf("reading the system prompt: %w", err)
		}
	}
	for i, m := range req.Messages {
		last := i == len(req.Messages)-1
		before := len(p.units)
		if openai {
			var msg struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			_ = json.Unmarshal(m, &msg)
			if err := add(m); err != nil {
				return Prefix{}, fmt.Errorf("reading messages[%d]: %w", i, err)
			}
			p.end = len(p.units)
			if last && msg.Role == "user" && strings.HasPrefix(msg.Content, NudgeMarker) {
				p.end = before // the gateway's nudge
			}
			continue
		}
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &msg); err != nil {
			return Prefix{}, fmt.Errorf("reading messages[%d]: %w", i, err)
		}
		p.units = append(p.units, sha256.Sum256([]byte("role:"+msg.Role)))
		nudge := false
		for _, b := range blocks(msg.Content) {
			var blk struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(b, &blk)
			if last && blk.Type == "text" && strings.HasPrefix(blk.Text, NudgeMarker) {
				nudge = true // the gateway's, and last
				break
			}
			if err := add(b); err != nil {
				return Prefix{}, fmt.Errorf("reading messages[%d]: %w", i, err)
			}
		}
		p.end = len(p.units)
		if nudge && p.end == before+1 {
			p.end = before // a message of the nudge alone
		}
	}
	return p, nil
}

// blocks is a content or system value as blocks: a string is one text
// block, null none.
func blocks(raw json.RawMessage) []json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}
	}
	var out []json.RawMessage
	_ = json.Unmarshal(raw, &out)
	return out
}

// canonicalUnit is raw with keys sorted and cache_control dropped, and
// whether raw carried cache_control at its top level.
func canonicalUnit(raw json.RawMessage) ([]byte, bool, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, false, err
	}
	marked := false
	if m, ok := v.(map[string]any); ok {
		_, marked = m["cache_control"]
	}
	b, err := json.Marshal(dropKey(v, "cache_control"))
	return b, marked, err
}

func dropKey(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, key)
		for k, e := range t {
			t[k] = dropKey(e, key)
		}
	case []any:
		for i, e := range t {
			t[i] = dropKey(e, key)
		}
	}
	return v
}

// Units is the number of cache units up to the end of what the client
// sent (a trailing nudge left out).
func (p Prefix) Units() int { return p.end }

// Reused is the number of leading units of p that a provider's cache
// could serve to next, the request after it: up to p's last cache_control
// breakpoint, or, when p has none, up to p's last client message.
func (p Prefix) Reused() int {
	if p.breakpoint >= 0 {
		return p.breakpoint + 1
	}
	return p.end
}

// Stable reports whether next starts with p's reusable prefix, unit for
// unit (Reused).
func (p Prefix) Stable(next Prefix) bool {
	n := p.Reused()
	if len(next.units) < n {
		return false
	}
	for i := 0; i < n; i++ {
		if p.units[i] != next.units[i] {
			return false
		}
	}
	return true
}
