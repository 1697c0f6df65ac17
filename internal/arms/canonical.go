package arms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// CanonicalJSON rewrites raw JSON into the one form every arm and the
// profiler use: object keys sorted bytewise at every depth, array order kept,
// number literals copied exactly as written (1.0 stays 1.0, 1e400 stays
// 1e400), no insignificant whitespace and no HTML escaping of <, > and &. The
// same JSON value written with any key order or spacing gives the same bytes.
// When an object repeats a key, the last value wins, as in encoding/json.
func CanonicalJSON(raw json.RawMessage) (string, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return "", err
	}
	return marshalCanonical(v)
}

// decodeJSON parses exactly one JSON value, keeping numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("canonicalizing JSON: empty input")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonicalizing JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonicalizing JSON: unexpected data after the first value")
	}
	return v, nil
}

// marshalCanonical writes a value decoded by decodeJSON. encoding/json sorts
// map keys and writes json.Number literals unchanged, so only HTML escaping
// and the trailing newline need handling.
func marshalCanonical(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("canonicalizing JSON: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// hasSchema reports whether a tool carries an input schema: absent, blank
// and a JSON null all mean none.
func hasSchema(t config.Tool) bool {
	s := bytes.TrimSpace(t.Schema)
	return len(s) > 0 && !bytes.Equal(s, []byte("null"))
}

// callName is the name a model uses to call the tool through the proxy: the
// "server:tool" id when the tool has one, else the bare name. Every listing
// arm labels tools with it, so listings are comparable and each entry is
// directly usable with call_tool.
func callName(t config.Tool) string {
	switch {
	case t.ID != "":
		return t.ID
	case t.Server != "":
		return config.ToolID(t.Server, t.Name)
	default:
		return t.Name
	}
}

// checkTool rejects tools no arm can render.
func checkTool(t config.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("tool %q has no name", t.ID)
	}
	return nil
}

// canonicalSchema returns the tool's schema in canonical JSON, or "" when it
// has none. A schema that is not a JSON object is an error: MCP requires an
// object schema for tool input.
func canonicalSchema(t config.Tool) (string, any, error) {
	if !hasSchema(t) {
		return "", nil, nil
	}
	v, err := decodeJSON(t.Schema)
	if err != nil {
		return "", nil, fmt.Errorf("schema of tool %q: %w", callName(t), err)
	}
	if _, ok := v.(map[string]any); !ok {
		return "", nil, fmt.Errorf("schema of tool %q: input schema must be a JSON object, got %s", callName(t), jsonKind(v))
	}
	s, err := marshalCanonical(v)
	if err != nil {
		return "", nil, fmt.Errorf("schema of tool %q: %w", callName(t), err)
	}
	return s, v, nil
}

// CanonicalToolText is the full definition of a tool as one text: its call
// name, a newline and its description, then a newline and its canonical JSON
// schema when it has one. It is the baseline_json rendering and the
// denominator of every savings figure, so all of them share one measure.
func CanonicalToolText(t config.Tool) (string, error) {
	if err := checkTool(t); err != nil {
		return "", err
	}
	schema, _, err := canonicalSchema(t)
	if err != nil {
		return "", err
	}
	text := callName(t) + "\n" + t.Description
	if schema != "" {
		text += "\n" + schema
	}
	return text, nil
}

// BaselineMetadata is the production index mapping of a tool: name, server
// and description unchanged and the schema as ParamsJSON (canonical JSON,
// empty when the tool has none). Arms that only change rendering return it.
func BaselineMetadata(t config.Tool) (config.ToolMetadata, error) {
	if err := checkTool(t); err != nil {
		return config.ToolMetadata{}, err
	}
	schema, _, err := canonicalSchema(t)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	return config.ToolMetadata{Name: t.Name, ServerName: t.Server, Description: t.Description, ParamsJSON: schema}, nil
}

// jsonKind names the JSON type of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// joinListing renders each tool with enc and joins the results with
// ListingSeparator, failing on the first tool that cannot be rendered.
func joinListing(ts []config.Tool, enc func(config.Tool) (string, error)) (string, error) {
	parts := make([]string, 0, len(ts))
	for i, t := range ts {
		s, err := enc(t)
		if err != nil {
			return "", fmt.Errorf("encoding listing entry %d: %w", i, err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ListingSeparator), nil
}
