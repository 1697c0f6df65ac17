package arms

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// CompactArm is compact_sig: each tool is one signature line,
//
//	server:tool(req:type, opt?:type)|description
//
// Required parameters come first in the order the schema's "required" list
// gives, then optional ones (marked "?") sorted by name. Types are written in
// a TypeScript-like notation a model already reads well: element types of
// arrays (string[]), inline object shapes ({from:string, to?:number}),
// literal unions for enums and consts ("name"|"size"), unions for
// anyOf/oneOf/type lists (string|null), intersections for allOf, and the
// name of a local $ref that would recurse. An optional parameter whose
// default is null drops "|null", since leaving it out means the same. The
// tool description is kept verbatim; per-parameter descriptions, defaults
// and validation keywords (format, minimum, ...) are left out, which is where
// the savings come from. describe_tool serves the full schema when a model
// needs it.
type CompactArm struct{}

// NewCompact returns the compact_sig arm.
func NewCompact() *CompactArm { return &CompactArm{} }

// Name implements Arm.
func (*CompactArm) Name() string { return CompactName }

// IndexAltering implements Arm: the index ingests the signature's parameter
// text instead of the schema JSON.
func (*CompactArm) IndexAltering() bool { return true }

// LowerBound implements Arm: the tool description is kept whole.
func (*CompactArm) LowerBound() bool { return false }

// EncodeTool implements Arm.
func (*CompactArm) EncodeTool(t config.Tool) (string, error) {
	params, err := compactParams(t)
	if err != nil {
		return "", err
	}
	sig := callName(t) + "(" + params + ")"
	if t.Description != "" {
		sig += "|" + t.Description
	}
	return sig, nil
}

// EncodeListing implements Arm: signatures joined by ListingSeparator.
func (a *CompactArm) EncodeListing(ts []config.Tool) (string, error) {
	return joinListing(ts, a.EncodeTool)
}

// EncodeIndexMetadata implements Arm: ParamsJSON becomes the text between
// the signature's parentheses; name, server and description are unchanged.
func (*CompactArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	params, err := compactParams(t)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	return config.ToolMetadata{Name: t.Name, ServerName: t.Server, Description: t.Description, ParamsJSON: params}, nil
}

// compactParams renders the parameter list of t's schema.
func compactParams(t config.Tool) (string, error) { return sigParams(t, 0) }

// sigParams renders the parameter list of t's schema, enums cut to maxEnum
// literals when it is positive.
func sigParams(t config.Tool, maxEnum int) (string, error) {
	if err := checkTool(t); err != nil {
		return "", err
	}
	_, root, err := canonicalSchema(t)
	if err != nil || root == nil {
		return "", err
	}
	r := sigRenderer{root: root, expanding: map[string]bool{}, maxEnum: maxEnum}
	params, err := r.fields(root.(map[string]any), "#", 0)
	if err != nil {
		return "", fmt.Errorf("schema of tool %q: %w", callName(t), err)
	}
	return params, nil
}

// maxSchemaDepth bounds nesting so a pathological schema fails loudly
// instead of recursing without end.
const maxSchemaDepth = 32

// sigRenderer turns JSON Schema into signature types. expanding holds the
// $ref targets being rendered, so a recursive reference prints its name
// instead of looping.
type sigRenderer struct {
	root      any
	expanding map[string]bool
	// maxEnum, when positive, cuts an enum of more literals to its first
	// maxEnum and "…" (brief_sig); zero lists them all (compact_sig).
	maxEnum int
}

// fields renders the properties of an object schema as "a:type, b?:type",
// followed by "[key:string]:type" when additionalProperties is a schema
// (extra keys of that type are accepted).
func (r *sigRenderer) fields(obj map[string]any, path string, depth int) (string, error) {
	props := map[string]any{}
	if p, ok := obj["properties"]; ok {
		m, ok := p.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s/properties must be an object, got %s", path, jsonKind(p))
		}
		props = m
	}
	var required []string
	seen := map[string]bool{}
	if req, ok := obj["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return "", fmt.Errorf("%s/required must be an array of strings, got %s", path, jsonKind(req))
		}
		for i, v := range list {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s/required/%d must be a string, got %s", path, i, jsonKind(v))
			}
			if !seen[s] {
				seen[s] = true
				required = append(required, s)
			}
		}
	}
	var optional []string
	for name := range props {
		if !seen[name] {
			optional = append(optional, name)
		}
	}
	sort.Strings(optional)

	parts := make([]string, 0, len(required)+len(optional))
	for _, group := range []struct {
		names []string
		mark  string
	}{{required, ""}, {optional, "?"}} {
		for _, name := range group.names {
			s, present := props[name]
			typ := "any" // required but never described: the model must still pass it
			if present {
				var err error
				if typ, err = r.typeOf(s, path+"/properties/"+pointerEscape(name), depth+1); err != nil {
					return "", err
				}
			}
			if m, ok := s.(map[string]any); ok && group.mark != "" {
				if def, ok := m["default"]; ok && def == nil {
					// Optional with a null default: leaving it out already
					// means null, so "|null" would say nothing new.
					typ = dropNull(typ)
				}
			}
			parts = append(parts, fieldName(name)+group.mark+":"+typ)
		}
	}
	if ap, ok := obj["additionalProperties"].(map[string]any); ok {
		typ, err := r.typeOf(ap, path+"/additionalProperties", depth+1)
		if err != nil {
			return "", err
		}
		parts = append(parts, "[key:string]:"+typ)
	}
	return strings.Join(parts, ", "), nil
}

// typeOf renders one schema as a type.
func (r *sigRenderer) typeOf(s any, path string, depth int) (string, error) {
	if depth > maxSchemaDepth {
		return "", fmt.Errorf("%s: schema nested deeper than %d levels", path, maxSchemaDepth)
	}
	switch v := s.(type) {
	case bool:
		if v {
			return "any", nil
		}
		return "never", nil
	case map[string]any:
		return r.objectType(v, path, depth)
	default:
		return "", fmt.Errorf("%s: a schema must be an object or a boolean, got %s", path, jsonKind(s))
	}
}

func (r *sigRenderer) objectType(s map[string]any, path string, depth int) (string, error) {
	if ref, ok := s["$ref"]; ok {
		return r.refType(ref, path, depth)
	}
	if c, ok := s["const"]; ok {
		return literal(c), nil
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return "", fmt.Errorf("%s/enum must be a non-empty array", path)
		}
		lits := make([]string, len(list))
		for i, v := range list {
			lits[i] = literal(v)
		}
		if r.maxEnum > 0 && len(lits) > r.maxEnum {
			lits = append(lits[:r.maxEnum:r.maxEnum], "…")
		}
		return joinUnique(lits, "|"), nil
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		m, ok := s[kw]
		if !ok {
			continue
		}
		list, ok := m.([]any)
		if !ok || len(list) == 0 {
			return "", fmt.Errorf("%s/%s must be a non-empty array", path, kw)
		}
		types := make([]string, len(list))
		for i, sub := range list {
			t, err := r.typeOf(sub, fmt.Sprintf("%s/%s/%d", path, kw, i), depth+1)
			if err != nil {
				return "", err
			}
			types[i] = t
		}
		if kw == "allOf" {
			for i, t := range types {
				types[i] = group(t)
			}
			return joinUnique(types, "&"), nil
		}
		return joinUnique(types, "|"), nil
	}
	switch typ := s["type"].(type) {
	case string:
		return r.baseType(typ, s, path, depth)
	case []any:
		if len(typ) == 0 {
			return "", fmt.Errorf("%s/type must not be an empty array", path)
		}
		types := make([]string, len(typ))
		for i, v := range typ {
			name, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s/type/%d must be a string, got %s", path, i, jsonKind(v))
			}
			t, err := r.baseType(name, s, path, depth)
			if err != nil {
				return "", err
			}
			types[i] = t
		}
		return joinUnique(types, "|"), nil
	case nil:
		if _, ok := s["type"]; ok {
			return "", fmt.Errorf("%s/type must be a string or an array of strings, got null", path)
		}
		// No type keyword: infer from the keywords that are there.
		if _, ok := s["properties"]; ok {
			return r.baseType("object", s, path, depth)
		}
		if _, ok := s["items"]; ok {
			return r.baseType("array", s, path, depth)
		}
		return "any", nil
	default:
		return "", fmt.Errorf("%s/type must be a string or an array of strings, got %s", path, jsonKind(typ))
	}
}

func (r *sigRenderer) baseType(name string, s map[string]any, path string, depth int) (string, error) {
	switch name {
	case "array":
		if items, ok := s["prefixItems"]; ok {
			return r.tupleType(items, path+"/prefixItems", depth)
		}
		items, ok := s["items"]
		if !ok {
			return "any[]", nil
		}
		if _, tuple := items.([]any); tuple { // draft-04 tuple form
			return r.tupleType(items, path+"/items", depth)
		}
		t, err := r.typeOf(items, path+"/items", depth+1)
		if err != nil {
			return "", err
		}
		return group(t) + "[]", nil
	case "object":
		f, err := r.fields(s, path, depth)
		if err != nil {
			return "", err
		}
		if f == "" {
			return "object", nil
		}
		return "{" + f + "}", nil
	default:
		return name, nil
	}
}

func (r *sigRenderer) tupleType(items any, path string, depth int) (string, error) {
	list, ok := items.([]any)
	if !ok {
		return "", fmt.Errorf("%s must be an array", path)
	}
	types := make([]string, len(list))
	for i, sub := range list {
		t, err := r.typeOf(sub, fmt.Sprintf("%s/%d", path, i), depth+1)
		if err != nil {
			return "", err
		}
		types[i] = t
	}
	return "[" + strings.Join(types, ", ") + "]", nil
}

// refType expands a local reference ("#/$defs/Node") in place, or prints the
// last segment of its name when the reference is remote, unresolvable or
// already being expanded (recursion).
func (r *sigRenderer) refType(ref any, path string, depth int) (string, error) {
	s, ok := ref.(string)
	if !ok {
		return "", fmt.Errorf("%s/$ref must be a string, got %s", path, jsonKind(ref))
	}
	name := s
	if i := strings.LastIndex(s, "/"); i >= 0 && i < len(s)-1 {
		name = pointerUnescape(s[i+1:])
	}
	if r.expanding[s] {
		return name, nil
	}
	target, ok := resolvePointer(r.root, s)
	if !ok {
		return name, nil
	}
	r.expanding[s] = true
	defer delete(r.expanding, s)
	return r.typeOf(target, s, depth+1)
}

// resolvePointer follows a same-document JSON pointer ("#/a/b").
func resolvePointer(root any, ref string) (any, bool) {
	if ref == "#" {
		return root, true
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	cur := root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = pointerUnescape(tok)
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(v) || fmt.Sprint(i) != tok {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func pointerUnescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// plainField is a parameter name that needs no quoting in a signature.
var plainField = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.\-]*$`)

// fieldName prints a parameter name, JSON-quoting names with characters that
// would make the signature ambiguous (spaces, commas, colons, ...).
func fieldName(name string) string {
	if plainField.MatchString(name) {
		return name
	}
	return literal(name)
}

// literal prints a JSON value as it appears in a signature: strings quoted,
// everything else as canonical JSON.
func literal(v any) string {
	s, err := marshalCanonical(v)
	if err != nil { // cannot happen for values decodeJSON produced
		return fmt.Sprint(v)
	}
	return s
}

// group wraps a union or intersection in parentheses so a suffix ("[]") or
// an outer operator binds to the whole of it.
func group(t string) string {
	if len(splitTop(t, '|')) > 1 || len(splitTop(t, '&')) > 1 {
		return "(" + t + ")"
	}
	return t
}

// dropNull removes a top-level "null" member from a union, unless it is the
// only member.
func dropNull(t string) string {
	parts := splitTop(t, '|')
	kept := parts[:0:0]
	for _, p := range parts {
		if p != "null" {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return t
	}
	return strings.Join(kept, "|")
}

// splitTop splits a rendered type at sep where it is not nested in
// brackets, braces, parentheses or a quoted literal.
func splitTop(t string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	inString := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, t[start:i])
			start = i + 1
		}
	}
	return append(parts, t[start:])
}

// joinUnique joins parts with sep, dropping repeats but keeping first
// appearance order.
func joinUnique(parts []string, sep string) string {
	seen := make(map[string]bool, len(parts))
	out := parts[:0:0]
	for _, p := range parts {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
