package noa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// CompressParseKind classifies how a Compress call's arguments arrived.
type CompressParseKind string

// Parse kinds.
const (
	ParseOK             CompressParseKind = "ok"
	ParseEmptyInput     CompressParseKind = "empty-input"
	ParseNotObject      CompressParseKind = "not-object"
	ParseMissingContent CompressParseKind = "missing-content"
	ParseContentNotList CompressParseKind = "content-not-array"
	ParseNoValidRanges  CompressParseKind = "no-valid-ranges"
	ParseTruncated      CompressParseKind = "truncated"
	ParseMalformedJSON  CompressParseKind = "malformed-json"
)

// CompressParseDiagnostics describes the raw arguments as received. Ok says
// whether usable ranges were recovered (the only thing to branch on); Kind
// says what shape they came in, so a repaired call stays visible in logs.
// When Ok is false, Ranges is always empty.
type CompressParseDiagnostics struct {
	Ok             bool
	Kind           CompressParseKind
	InvalidItems   int
	InvalidReasons []string
	// RawPrefix: up to 800 leading characters of the input, for logging.
	RawPrefix string
	// Length is the raw input's length in bytes.
	Length int
	// Keys are the top-level keys found, sorted.
	Keys []string
	// Salvaged: the input was cut off, and its ranges were rescued by
	// matching brackets instead of a normal JSON decode.
	Salvaged bool
	// TailRepaired marks input fixed by appending missing closing brackets.
	TailRepaired bool
}

// CompressParseResult is what ParseCompressArgs made of the arguments.
type CompressParseResult struct {
	Ranges          []CompressRange
	TopLevelTopic   string
	SummaryMaxChars *int
	Diagnostics     CompressParseDiagnostics
}

// Accepted spellings of the per-range fields. The schema documents the first
// of each; models trained on other tools use the rest.
var (
	startKeys   = []string{"start", "startRef", "start_ref", "startId", "start_id", "from"}
	endKeys     = []string{"end", "endRef", "end_ref", "endId", "end_id", "to"}
	summaryKeys = []string{"summary", "text"}
	maxKeys     = []string{"summary_max_chars", "summaryMaxChars"}
)

// ParseCompressArgs reads a Compress call, forgiving every malformation we
// can repair without guessing. Each repair answers a mistake models really
// make: trailing commas are dropped; a
// document cut off after its last complete value gets its missing closing
// brackets; a document cut off inside a value has every complete range
// salvaged by bracket matching (the cut one is lost, never half-kept); a
// whole document or "content" array sent as a JSON string is decoded again;
// range items sent as strings are decoded too.
func ParseCompressArgs(raw []byte) CompressParseResult {
	var res CompressParseResult
	d := &res.Diagnostics
	d.Length = len(raw)
	d.RawPrefix = prefixRunes(string(raw), 800)
	text := strings.TrimSpace(string(raw))
	if text == "" || text == "null" {
		d.Kind = ParseEmptyInput
		return res
	}
	v, how := decodeLenient(text)
	// A double-encoded document: a JSON string holding the object.
	if s, ok := v.(string); ok {
		inner := strings.TrimSpace(s)
		if v2, how2 := decodeLenient(inner); v2 != nil {
			v, how = v2, how2
		} else if strings.HasPrefix(inner, "{") {
			// A double-encoded document that was itself cut off: salvage
			// from the text inside the string, as for one sent plainly.
			v, text = nil, inner
		}
	}
	if v == nil {
		if items, ok := salvageContent(text); ok {
			d.Salvaged = true
			d.Kind = ParseTruncated
			d.Keys = []string{"content"}
			res.Ranges = collectRanges(items, nil, d)
			return finish(res)
		}
		d.Kind = ParseMalformedJSON
		return res
	}
	obj, ok := v.(map[string]any)
	if !ok {
		d.Kind = ParseNotObject
		return res
	}
	for k := range obj {
		d.Keys = append(d.Keys, k)
	}
	sort.Strings(d.Keys)
	switch how {
	case "trailing-comma":
		d.Kind = ParseMalformedJSON
	case "tail":
		d.Kind = ParseTruncated
		d.TailRepaired = true
	default:
		d.Kind = ParseOK
	}
	if t, ok := obj["topic"].(string); ok {
		res.TopLevelTopic = strings.TrimSpace(t)
	}
	res.SummaryMaxChars = intField(obj, maxKeys)
	content, ok := obj["content"]
	if !ok || content == nil {
		d.Kind = ParseMissingContent
		return res
	}
	if s, ok := content.(string); ok {
		cv, _ := decodeLenient(strings.TrimSpace(s))
		if cv == nil {
			if items, ok := salvageArray(s); ok {
				cv = items
				d.Salvaged = true
				d.Kind = ParseTruncated
			}
		}
		content = cv
	}
	items, ok := content.([]any)
	if !ok {
		if one, isObj := content.(map[string]any); isObj {
			items = []any{one} // a single range sent without its array
		} else {
			d.Kind = ParseContentNotList
			return res
		}
	}
	res.Ranges = collectRanges(items, res.SummaryMaxChars, d)
	return finish(res)
}

func finish(res CompressParseResult) CompressParseResult {
	d := &res.Diagnostics
	d.Ok = len(res.Ranges) > 0
	if !d.Ok {
		res.Ranges = nil
		if d.Kind == ParseOK || d.Kind == "" {
			d.Kind = ParseNoValidRanges
		}
	}
	return res
}

func collectRanges(items []any, topMax *int, d *CompressParseDiagnostics) []CompressRange {
	var out []CompressRange
	for i, it := range items {
		if s, ok := it.(string); ok {
			if v, _ := decodeLenient(strings.TrimSpace(s)); v != nil {
				it = v
			}
		}
		m, ok := it.(map[string]any)
		if !ok {
			d.InvalidItems++
			d.InvalidReasons = append(d.InvalidReasons, fmt.Sprintf("item %d is not an object", i+1))
			continue
		}
		start, sOK := stringField(m, startKeys)
		end, eOK := stringField(m, endKeys)
		summary, sumOK := stringField(m, summaryKeys)
		var missing []string
		if !sOK {
			missing = append(missing, "start")
		}
		if !eOK {
			missing = append(missing, "end")
		}
		if !sumOK {
			missing = append(missing, "summary")
		}
		if len(missing) > 0 {
			d.InvalidItems++
			d.InvalidReasons = append(d.InvalidReasons, fmt.Sprintf("item %d lacks %s", i+1, strings.Join(missing, ", ")))
			continue
		}
		r := CompressRange{StartRef: start, EndRef: end, Summary: summary, SummaryMaxChars: intField(m, maxKeys)}
		if t, ok := m["topic"].(string); ok {
			r.Topic = strings.TrimSpace(t)
		}
		if r.SummaryMaxChars == nil && topMax != nil {
			v := *topMax
			r.SummaryMaxChars = &v
		}
		out = append(out, r)
	}
	return out
}

func stringField(m map[string]any, keys []string) (string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return s, true
		}
	}
	return "", false
}

func intField(m map[string]any, keys []string) *int {
	for _, k := range keys {
		switch v := m[k].(type) {
		case float64:
			if v > 0 && v < 1e9 {
				n := int(v)
				return &n
			}
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return &n
			}
		}
	}
	return nil
}

// decodeLenient parses text as JSON, repairing trailing commas and a missing
// tail of closing brackets. how is "", "trailing-comma" or "tail".
func decodeLenient(text string) (any, string) {
	if text == "" {
		return nil, ""
	}
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return v, ""
	}
	fixed := dropTrailingCommas(text)
	if json.Unmarshal([]byte(fixed), &v) == nil {
		return v, "trailing-comma"
	}
	if closed, ok := closeTail(fixed); ok {
		if json.Unmarshal([]byte(closed), &v) == nil {
			return v, "tail"
		}
	}
	return nil, ""
}

// jsonString follows a byte-by-byte walk over JSON text, so the repairs
// below can match brackets and commas while ignoring those inside strings.
type jsonString struct{ in, esc bool }

// consume reports whether c belongs to a string literal (its quotes
// included) and advances the state past it.
func (j *jsonString) consume(c byte) bool {
	switch {
	case j.in && j.esc:
		j.esc = false
	case j.in && c == '\\':
		j.esc = true
	case j.in && c == '"':
		j.in = false
	case j.in:
	case c == '"':
		j.in = true
	default:
		return false
	}
	return true
}

// dropTrailingCommas removes commas directly followed (after whitespace) by
// a closing bracket, outside strings.
func dropTrailingCommas(s string) string {
	var b strings.Builder
	var str jsonString
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.consume(c) {
			b.WriteByte(c)
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t' || s[j] == '\r') {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// closeTail appends the closing brackets a document cut off between values
// is missing. It refuses when the cut falls inside a string or right after a
// key, because completing those would invent content.
func closeTail(s string) (string, bool) {
	var stack []byte
	var str jsonString
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.consume(c) {
			continue
		}
		switch c {
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) == 0 {
				return "", false
			}
			stack = stack[:len(stack)-1]
		}
	}
	if str.in || len(stack) == 0 {
		return "", false
	}
	t := strings.TrimRight(s, " \t\r\n")
	t = strings.TrimSuffix(t, ",")
	if strings.HasSuffix(t, ":") {
		return "", false
	}
	var b strings.Builder
	b.WriteString(t)
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String(), true
}

// salvageContent finds the "content" array in a cut-off document and
// recovers its complete items.
func salvageContent(text string) ([]any, bool) {
	i := strings.Index(text, `"content"`)
	if i < 0 {
		return nil, false
	}
	rest := text[i+len(`"content"`):]
	j := strings.IndexByte(rest, '[')
	if j < 0 {
		return nil, false
	}
	if pre := strings.TrimSpace(rest[:j]); pre != ":" {
		// A stringified array: `"content": "[{...` — unescape what we can.
		if strings.HasPrefix(pre, ":") && strings.HasSuffix(pre, `"`) {
			un := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(rest[j:])
			return salvageArray(un)
		}
		return nil, false
	}
	return salvageArray(rest[j:])
}

// salvageArray recovers every complete top-level object of a JSON array
// whose end may be missing, by bracket matching outside strings.
func salvageArray(s string) ([]any, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	var out []any
	depth, start := 0, -1
	var str jsonString
	for i := 1; i < len(s); i++ {
		c := s[i]
		if str.consume(c) {
			continue
		}
		switch c {
		case '{':
			if depth == 0 {
				start = i
			}
			depth++
		case '}':
			depth--
			if depth == 0 && start >= 0 {
				var v any
				frag := dropTrailingCommas(s[start : i+1])
				if json.Unmarshal([]byte(frag), &v) == nil {
					out = append(out, v)
				}
				start = -1
			}
			if depth < 0 {
				return out, len(out) > 0
			}
		case ']':
			if depth == 0 {
				return out, len(out) > 0
			}
		}
	}
	return out, len(out) > 0
}

func prefixRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// CompressToolSchema is the Compress tool's JSON Schema. "content" has no
// "type": providers that do not enforce tool schemas send nested arrays as
// strings, and a schema demanding an array would reject that before
// ParseCompressArgs could repair it.
func CompressToolSchema() map[string]any {
	rangeItem := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"start":             map[string]any{"type": "string", "description": "Ref (m00012) or block id (b3)"},
			"end":               map[string]any{"type": "string", "description": "Inclusive"},
			"summary":           map[string]any{"type": "string", "description": "By noa's rules"},
			"topic":             map[string]any{"type": "string", "description": "A few words"},
			"summary_max_chars": map[string]any{"type": "integer"},
		},
		"required": []any{"start", "end", "summary"},
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"topic": map[string]any{"type": "string"},
			"content": map[string]any{
				"description": "Ranges to replace",
				"items":       rangeItem,
			},
			"summary_max_chars": map[string]any{"type": "integer", "description": "Raise the summary length limit"},
		},
		"required": []any{"content"},
	}
}

// compressArgsJSON renders ranges as Compress arguments (tests, simulations
// and hosts that replay calls).
func compressArgsJSON(ranges []CompressRange) string {
	type item struct {
		Start   string `json:"start"`
		End     string `json:"end"`
		Summary string `json:"summary"`
		Topic   string `json:"topic,omitempty"`
	}
	var items []item
	for _, r := range ranges {
		items = append(items, item{r.StartRef, r.EndRef, r.Summary, r.Topic})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"content": items})
	return strings.TrimSpace(buf.String())
}
