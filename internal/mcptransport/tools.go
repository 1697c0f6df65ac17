package mcptransport

import (
	"bytes"
	"encoding/json"
)

// The front passes on every upstream tool as the server sent it, but
// mcp-go's Tool.MarshalJSON writes "annotations" for every tool, an empty
// object when the tool has none, and no hook reaches it (issue 29: no
// fields added to what passes through). The transports hold every message
// the front writes, one per write, so the empty objects are taken out
// there, with the other corrections of answers.go (correctAnswer), on
// every transport alike. An empty annotations object says nothing, so one
// a server sent is dropped too.

// emptyAnnotations is how mcp-go writes a tool's empty annotations.
var emptyAnnotations = []byte(`"annotations":{}`)

// withoutEmptyAnnotations returns p, a piece of output holding whole
// messages (JSON lines, or SSE events whose data lines are JSON), with the
// empty "annotations" taken out of every tool of a tools/list answer;
// p itself when there are none.
func withoutEmptyAnnotations(p []byte) []byte {
	if !bytes.Contains(p, emptyAnnotations) {
		return p
	}
	var out []byte
	changed := false
	for line := range bytes.Lines(p) {
		body, eol := line, []byte(nil)
		if i := len(bytes.TrimRight(body, "\r\n")); i < len(body) {
			body, eol = body[:i], body[i:]
		}
		var prefix []byte // an SSE event's "data: "
		if rest, ok := bytes.CutPrefix(body, []byte("data:")); ok {
			rest = bytes.TrimLeft(rest, " ")
			prefix, body = body[:len(body)-len(rest)], rest
		}
		if msg, ok := trimToolsList(body); ok {
			changed = true
			out = append(append(append(out, prefix...), msg...), eol...)
			continue
		}
		out = append(out, line...)
	}
	if !changed {
		return p
	}
	return out
}

// trimToolsList takes the empty annotations out of the tools of msg when
// it is a tools/list answer (a JSON-RPC response whose result holds a
// tools array), keeping everything else as mcp-go wrote it: the message's
// and the result's members in mcp-go's order, each value byte for byte.
func trimToolsList(msg []byte) ([]byte, bool) {
	if !bytes.Contains(msg, emptyAnnotations) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || len(top) != 3 || top["jsonrpc"] == nil || top["id"] == nil || top["result"] == nil {
		return nil, false
	}
	// A result's members (_meta, nextCursor, tools) and a tool's come in
	// key order from mcp-go, as a map encodes them.
	var result map[string]json.RawMessage
	if json.Unmarshal(top["result"], &result) != nil || result["tools"] == nil {
		return nil, false
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(result["tools"], &tools) != nil {
		return nil, false
	}
	changed := false
	for _, t := range tools {
		if string(t["annotations"]) == "{}" {
			delete(t, "annotations")
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	var err error
	if result["tools"], err = encode(tools); err != nil {
		return nil, false
	}
	res, err := encode(result)
	if err != nil {
		return nil, false
	}
	out, err := encode(struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{top["jsonrpc"], top["id"], res})
	if err != nil {
		return nil, false
	}
	return out, true
}

// encode is json.Marshal without HTML escaping, so that raw values pass
// unchanged.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
