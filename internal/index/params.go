package index

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// paramsText turns a tool's parameter text into the words worth indexing.
// For a JSON Schema it keeps each property's name, title, description and
// string enum values, nested properties included, and drops the schema's own
// vocabulary ("type", "string", "properties", "required", ...), which every
// tool shares and which would otherwise add noise to every document. Text
// that is not a JSON object (an arm's own rendering, such as compact_sig's
// "path:string, dryRun?:boolean") is indexed as it is, less the JSON type
// names written as a parameter's type, for the same reason.
func paramsText(params string) string { return paramsWords(params, asIs) }

// paramsWords is paramsText with each property's description passed
// through desc, or left out when desc is nil (names, titles and enum values
// are kept either way).
func paramsWords(params string, desc func(string) string) string {
	trimmed := strings.TrimSpace(params)
	if !strings.HasPrefix(trimmed, "{") {
		return typeNames.ReplaceAllString(params, ":")
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(trimmed), &schema); err != nil {
		return params
	}
	var b strings.Builder
	writeSchemaWords(&b, schema, 0, desc)
	return strings.TrimSpace(b.String())
}

// typeNames matches a JSON type name in type position, after a colon
// ("path:string", "type: integer"); a parameter named like a type ("number:
// integer") keeps its name.
// asIs keeps a description as it is.
func asIs(s string) string { return s }

var typeNames = regexp.MustCompile(`:\s*(?:string|number|integer|boolean|object|array|null|any)\b`)

// maxSchemaDepth bounds recursion into nested schemas; deeper levels rarely
// carry words a query would use, and a cap keeps hostile schemas cheap.
const maxSchemaDepth = 4

func writeSchemaWords(b *strings.Builder, schema map[string]any, depth int, desc func(string) string) {
	if depth > maxSchemaDepth {
		return
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			b.WriteString(name)
			b.WriteString(". ")
			if sub, ok := props[name].(map[string]any); ok {
				writePropertyWords(b, sub, depth, desc)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := schema[key].(map[string]any); ok {
			writeSchemaWords(b, sub, depth+1, desc)
		}
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := schema[key].([]any); ok {
			for _, v := range list {
				if sub, ok := v.(map[string]any); ok {
					writeSchemaWords(b, sub, depth+1, desc)
				}
			}
		}
	}
}

func writePropertyWords(b *strings.Builder, prop map[string]any, depth int, desc func(string) string) {
	if s, ok := prop["title"].(string); ok && s != "" {
		b.WriteString(s)
		b.WriteString(". ")
	}
	if s, ok := prop["description"].(string); ok && desc != nil {
		if s = desc(s); s != "" {
			b.WriteString(s)
			b.WriteString(". ")
		}
	}
	if enum, ok := prop["enum"].([]any); ok {
		for _, v := range enum {
			if s, ok := v.(string); ok {
				b.WriteString(s)
				b.WriteString(" ")
			}
		}
	}
	writeSchemaWords(b, prop, depth+1, desc)
}
