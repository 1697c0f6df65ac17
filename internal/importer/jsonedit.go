package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// member is one key of a JSON object with its value's bytes.
type member struct {
	key string
	raw json.RawMessage
}

// members returns the members of the JSON object data in file order (a
// duplicate key keeps its last value, as clients read them).
func members(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		k := tok.(string)
		if i := indexOf(out, k); i >= 0 {
			out = append(out[:i], out[i+1:]...)
		}
		out = append(out, member{key: k, raw: raw})
	}
	return out, nil
}

func indexOf(ms []member, key string) int {
	for i, m := range ms {
		if m.key == key {
			return i
		}
	}
	return -1
}

// setMember returns the JSON object data with key's value replaced by val
// (added at the end when absent; removed when val is nil), every other
// member kept in place, indented by two spaces.
func setMember(data []byte, key string, val []byte) ([]byte, error) {
	ms, err := members(data)
	if err != nil {
		return nil, err
	}
	i := indexOf(ms, key)
	switch {
	case val == nil && i >= 0:
		ms = append(ms[:i], ms[i+1:]...)
	case val == nil:
	case i >= 0:
		ms[i].raw = val
	default:
		ms = append(ms, member{key: key, raw: val})
	}
	return encodeMembers(ms)
}

// encodeMembers writes members as an indented JSON object.
func encodeMembers(ms []member) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.raw)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// PlainJSON reports whether data has no comments or trailing commas, so
// rewriting it loses nothing but white space.
func PlainJSON(data []byte) bool { return bytes.Equal(stripJSONC(data), data) }

// stripJSONC turns JSON with comments and trailing commas (VS Code's and
// Cursor's files allow both) into plain JSON. Strings are left alone.
func stripJSONC(data []byte) []byte {
	// Comments first, so a comment between a comma and its } is gone by
	// the time trailing commas are looked for.
	return stripPass(stripPass(data, true), false)
}

func stripPass(data []byte, comments bool) []byte {
	out := make([]byte, 0, len(data))
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(data) {
					i++
					out = append(out, data[i])
				}
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case comments && c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case comments && c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				i = len(data)
			} else {
				i += end + 3
			}
			out = append(out, ' ')
		case !comments && c == ',':
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue // trailing comma
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
