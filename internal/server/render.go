package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/config"
)

// InterimRenderer is the default Renderer until an encoding arm is
// configured: one line per match, best first:
//
//	filesystem:read_text_file(path: string, head?: number) 4.21 Read the complete contents of a file.
//
// Parameters come in schema order, optional ones marked with "?"; the
// description is cut to its first sentence (at most 160 characters).
func InterimRenderer(matches []Match) (string, error) {
	var b strings.Builder
	for i, m := range matches {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s(%s) %.2f", m.Tool.ID, Signature(m.Tool.Schema), m.Score)
		if d := firstSentence(m.Tool.Description, 160); d != "" {
			b.WriteString(" ")
			b.WriteString(d)
		}
	}
	return b.String(), nil
}

// ArmRenderer adapts an encoding arm's EncodeListing to a Renderer: the arm
// renders the matched tools in rank order (scores are not shown).
func ArmRenderer(encodeListing func([]config.Tool) (string, error)) Renderer {
	return func(matches []Match) (string, error) {
		tools := make([]config.Tool, len(matches))
		for i, m := range matches {
			tools[i] = m.Tool
		}
		return encodeListing(tools)
	}
}

// Signature renders a JSON input schema's top-level parameters compactly:
// "path: string, mode?: read|write, tags?: string[]". Key order is the
// schema's own. A schema it cannot read renders as "...".
func Signature(schema json.RawMessage) string {
	if len(bytes.TrimSpace(schema)) == 0 {
		return ""
	}
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return "..."
	}
	if len(top.Properties) == 0 || string(top.Properties) == "null" {
		return ""
	}
	required := map[string]bool{}
	for _, r := range top.Required {
		required[r] = true
	}
	keys, values, err := orderedObject(top.Properties)
	if err != nil {
		return "..."
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		opt := "?"
		if required[k] {
			opt = ""
		}
		parts[i] = k + opt + ": " + typeName(values[i])
	}
	return strings.Join(parts, ", ")
}

// typeName renders one property schema's type: enums as a|b, arrays as
// item[], unions as a|b, unknown as any.
func typeName(raw json.RawMessage) string {
	var p struct {
		Type  any               `json:"type"`
		Enum  []any             `json:"enum"`
		Items json.RawMessage   `json:"items"`
		AnyOf []json.RawMessage `json:"anyOf"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "any"
	}
	if len(p.Enum) > 0 && len(p.Enum) <= 6 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			vals[i] = fmt.Sprint(e)
		}
		return strings.Join(vals, "|")
	}
	switch t := p.Type.(type) {
	case string:
		if t == "array" {
			if len(p.Items) > 0 {
				return typeName(p.Items) + "[]"
			}
			return "any[]"
		}
		return t
	case []any:
		var names []string
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				names = append(names, s)
			}
		}
		if len(names) > 0 {
			return strings.Join(names, "|")
		}
	}
	if len(p.AnyOf) > 0 {
		names := make([]string, 0, len(p.AnyOf))
		for _, a := range p.AnyOf {
			if n := typeName(a); n != "null" {
				names = append(names, n)
			}
		}
		return strings.Join(names, "|")
	}
	return "any"
}

// orderedObject returns a JSON object's keys and raw values in document order.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		values = append(values, v)
	}
	return keys, values, nil
}

// firstSentence returns s up to its first sentence end or line break, cut to
// at most max runes on a word boundary.
func firstSentence(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)[:max]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// compactJSON removes insignificant whitespace; invalid JSON is returned as is.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// compactJSONValue renders a decoded JSON value for an error message.
func compactJSONValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
