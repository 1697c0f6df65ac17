package toon

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is one piece on purpose: the decoder is one recursive-descent
// parser over the TOON grammar (key paths, array headers, tabular rows, list
// items, folded keys), whose functions call one another throughout and share
// the line cursor and strict-mode checks.

// SyntaxError reports input that is not valid TOON (in strict mode, also the
// violations of spec §14). Line is 1-based; 0 when no single line is at fault.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("toon: line %d: %s", e.Line, e.Msg)
	}
	return "toon: " + e.Msg
}

func syntaxErr(line int, format string, args ...any) error {
	return &SyntaxError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Decode parses a TOON document. Objects come back as Object (document
// order), arrays as []any, numbers as json.Number in canonical form (exact:
// no digit is lost whatever the magnitude), and strings, booleans and null as
// string, bool and nil. An empty document is an empty Object.
//
// In strict mode (the default) every violation listed in spec §14 is a
// *SyntaxError; so is content the structure cannot place, such as a line
// indented deeper than anything open above it.
func Decode(s string, opts DecodeOptions) (any, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	d := &decoder{cfg: cfg}
	if err := d.scan(s); err != nil {
		return nil, err
	}
	v, err := d.document()
	if err != nil {
		return nil, err
	}
	if cfg.expand {
		if v, err = d.expandValue(v); err != nil {
			return nil, err
		}
	}
	return finish(v), nil
}

// srcLine is one non-blank line of the document.
type srcLine struct {
	num     int // 1-based line number
	depth   int
	content string // the line without its indentation
}

type decoder struct {
	cfg    decodeConfig
	lines  []srcLine
	blanks []int // line numbers of blank lines, ascending
	pos    int   // index of the next unread line
	nest   int   // current nesting, bounded by maxDepth
}

// scan splits the document into lines, measuring indentation and checking it
// in strict mode (spec §12).
func (d *decoder) scan(s string) error {
	for i, raw := range strings.Split(s, "\n") {
		num := i + 1
		spaces := 0
		for spaces < len(raw) && raw[spaces] == ' ' {
			spaces++
		}
		ws := spaces
		for ws < len(raw) && (raw[ws] == ' ' || raw[ws] == '\t') {
			ws++
		}
		if trim(raw) == "" {
			d.blanks = append(d.blanks, num)
			continue
		}
		content := raw[spaces:]
		if d.cfg.strict {
			if ws > spaces {
				return syntaxErr(num, "tab in indentation; indent with spaces only")
			}
			if spaces%d.cfg.indent != 0 {
				return syntaxErr(num, "indentation of %d spaces is not a multiple of %d", spaces, d.cfg.indent)
			}
		} else {
			// Lenient: tabs mixed into the indentation are skipped and do
			// not count toward depth.
			content = raw[ws:]
		}
		d.lines = append(d.lines, srcLine{num: num, depth: spaces / d.cfg.indent, content: content})
	}
	return nil
}

func (d *decoder) peek() *srcLine {
	if d.pos < len(d.lines) {
		return &d.lines[d.pos]
	}
	return nil
}

// document decides the root form (spec §5) and decodes it.
func (d *decoder) document() (any, error) {
	if len(d.lines) == 0 {
		return newObject(), nil
	}
	first := d.lines[0]
	var root any
	switch {
	case trim(first.content) == "[]":
		d.pos++
		root = []any{}
	case isArrayHeaderContent(first.content):
		h, ok, err := parseHeader(first.content, d.cfg.strict)
		if err != nil {
			return nil, syntaxErr(first.num, "%v", err)
		}
		if ok {
			d.pos++
			if root, err = d.arrayBody(h, 0, first.num); err != nil {
				return nil, err
			}
			break
		}
		fallthrough
	default:
		if !isKeyValueLine(first.content) {
			if len(d.lines) == 1 {
				d.pos++
				v, err := parsePrimitive(first.content)
				if err != nil {
					return nil, syntaxErr(first.num, "%v", err)
				}
				return v, nil
			}
			if d.lines[1].depth == 0 {
				return nil, syntaxErr(first.num, "a document with several root lines must consist of key: value lines; this one has no colon")
			}
		}
		obj, err := d.fields(0)
		if err != nil {
			return nil, err
		}
		root = obj
	}
	if l := d.peek(); l != nil && d.cfg.strict {
		return nil, syntaxErr(l.num, "unexpected line: its indentation does not fit the structure above it")
	}
	return root, nil
}

// fields decodes the key/value lines of one object whose first line is at
// depth >= base; siblings share the first line's depth.
func (d *decoder) fields(base int) (*objBuilder, error) {
	if d.nest++; d.nest > maxDepth {
		return nil, errTooDeep
	}
	defer func() { d.nest-- }()
	obj := newObject()
	depth := -1
	for l := d.peek(); l != nil && l.depth >= base; l = d.peek() {
		if depth < 0 {
			depth = l.depth
		}
		if l.depth != depth {
			break
		}
		d.pos++
		if err := d.keyValue(l.content, l.num, depth, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// keyValue decodes one field line (content at depth) into obj, consuming any
// nested lines that belong to its value.
func (d *decoder) keyValue(content string, num, depth int, obj *objBuilder) error {
	h, ok, err := parseHeader(content, d.cfg.strict)
	if err != nil {
		return syntaxErr(num, "%v", err)
	}
	if ok && h.hasKey {
		arr, err := d.arrayBody(h, depth, num)
		if err != nil {
			return err
		}
		return obj.set(h.key, h.quotedKey, arr, d.cfg.strict, num)
	}
	key, quoted, rest, err := parseKey(content)
	if err != nil {
		return syntaxErr(num, "%v", err)
	}
	rest = trim(rest)
	var v any
	switch {
	case rest == "":
		// "key:" opens an object; it is empty unless deeper lines follow.
		if l := d.peek(); l != nil && l.depth > depth {
			if v, err = d.fields(depth + 1); err != nil {
				return err
			}
		} else {
			v = newObject()
		}
	case rest == "[]":
		v = []any{}
	default:
		if v, err = parsePrimitive(rest); err != nil {
			return syntaxErr(num, "%v", err)
		}
	}
	return obj.set(key, quoted, v, d.cfg.strict, num)
}

// arrayBody decodes the elements announced by header h found on line num at
// depth: inline values, tabular rows or list items.
func (d *decoder) arrayBody(h header, depth, num int) ([]any, error) {
	if d.nest++; d.nest > maxDepth {
		return nil, errTooDeep
	}
	defer func() { d.nest-- }()
	if h.inline != "" {
		vals := splitDelimited(h.inline, h.delim)
		if d.cfg.strict && len(vals) != h.n {
			return nil, syntaxErr(num, "array declares %d values but has %d", h.n, len(vals))
		}
		out := make([]any, len(vals))
		for i, t := range vals {
			v, err := parsePrimitive(t)
			if err != nil {
				return nil, syntaxErr(num, "%v", err)
			}
			out[i] = v
		}
		return out, nil
	}
	if len(h.fields) > 0 {
		return d.table(h, depth, num)
	}
	return d.list(h, depth, num)
}

// table decodes the rows of a tabular array (spec §9.3).
func (d *decoder) table(h header, depth, num int) ([]any, error) {
	rowDepth := depth + 1
	out := []any{}
	first, last := 0, 0
	for l := d.peek(); l != nil && len(out) < h.n && l.depth == rowDepth && isDataRow(l.content, h.delim); l = d.peek() {
		d.pos++
		if first == 0 {
			first = l.num
		}
		last = l.num
		cells := splitDelimited(l.content, h.delim)
		if d.cfg.strict && len(cells) != len(h.fields) {
			return nil, syntaxErr(l.num, "row has %d values but the header declares %d fields", len(cells), len(h.fields))
		}
		row := newObject()
		for i, f := range h.fields {
			if i >= len(cells) {
				break
			}
			v, err := parsePrimitive(cells[i])
			if err != nil {
				return nil, syntaxErr(l.num, "%v", err)
			}
			// Field names are unique in valid input; repeated ones resolve
			// last-write-wins without a strict error of their own.
			if err := row.set(f, h.quoted[i], v, false, l.num); err != nil {
				return nil, err
			}
		}
		out = append(out, row)
	}
	if !d.cfg.strict {
		return out, nil
	}
	if len(out) != h.n {
		return nil, syntaxErr(num, "table declares %d rows but has %d", h.n, len(out))
	}
	if err := d.noBlankBetween(first, last, "table"); err != nil {
		return nil, err
	}
	if l := d.peek(); l != nil && l.depth == rowDepth && !isListMarker(l.content) && isDataRow(l.content, h.delim) {
		return nil, syntaxErr(l.num, "table declares %d rows but has more", h.n)
	}
	return out, nil
}

func isListMarker(content string) bool {
	return content == "-" || strings.HasPrefix(content, "- ")
}

// list decodes the items of an expanded list (spec §9.2, §9.4, §10).
func (d *decoder) list(h header, depth, num int) ([]any, error) {
	itemDepth := depth + 1
	out := []any{}
	first, last := 0, 0
	for l := d.peek(); l != nil && len(out) < h.n && l.depth == itemDepth && isListMarker(l.content); l = d.peek() {
		if first == 0 {
			first = l.num
		}
		v, err := d.listItem(itemDepth)
		if err != nil {
			return nil, err
		}
		last = d.lines[d.pos-1].num
		out = append(out, v)
	}
	if !d.cfg.strict {
		return out, nil
	}
	if len(out) != h.n {
		return nil, syntaxErr(num, "list declares %d items but has %d", h.n, len(out))
	}
	if err := d.noBlankBetween(first, last, "list"); err != nil {
		return nil, err
	}
	if l := d.peek(); l != nil && l.depth == itemDepth && isListMarker(l.content) {
		return nil, syntaxErr(l.num, "list declares %d items but has more", h.n)
	}
	return out, nil
}

// noBlankBetween rejects blank lines strictly inside an array's lines.
func (d *decoder) noBlankBetween(first, last int, what string) error {
	i := sort.SearchInts(d.blanks, first+1)
	if i < len(d.blanks) && d.blanks[i] < last {
		return syntaxErr(d.blanks[i], "blank line inside a %s", what)
	}
	return nil
}

// listItem decodes the list item starting at the next line, at depth.
func (d *decoder) listItem(depth int) (any, error) {
	l := d.lines[d.pos]
	d.pos++
	if l.content == "-" {
		return newObject(), nil
	}
	after := l.content[2:]
	switch t := trim(after); {
	case t == "":
		return newObject(), nil
	case t == "[]":
		return []any{}, nil
	}
	h, ok, err := parseHeader(after, d.cfg.strict)
	if err != nil {
		return nil, syntaxErr(l.num, "%v", err)
	}
	if ok && !h.hasKey {
		// "- [M]: ..." is an array item.
		return d.arrayBody(h, depth, l.num)
	}
	if !isKeyValueContent(after) {
		v, err := parsePrimitive(after)
		if err != nil {
			return nil, syntaxErr(l.num, "%v", err)
		}
		return v, nil
	}
	// An object: its first field sits on the hyphen line, the others one
	// level deeper. A table as first field keeps its rows two levels deeper
	// (spec §10), which arrayBody at depth+1 gives.
	if d.nest++; d.nest > maxDepth {
		return nil, errTooDeep
	}
	defer func() { d.nest-- }()
	obj := newObject()
	if err := d.keyValue(after, l.num, depth+1, obj); err != nil {
		return nil, err
	}
	for n := d.peek(); n != nil && n.depth == depth+1 && !isListMarker(n.content); n = d.peek() {
		d.pos++
		if err := d.keyValue(n.content, n.num, depth+1, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// header is a parsed array header (spec §6).
type header struct {
	key       string
	hasKey    bool
	quotedKey bool
	n         int
	delim     byte
	fields    []string // nil without a field list
	quoted    []bool   // per field: was its name quoted
	inline    string   // trimmed text after the colon
}

// parseHeader recognizes an array header at the start of content. ok is
// false when content is not a header (it may still be a key/value line); err
// reports a header that is malformed in a way strict mode must reject.
func parseHeader(content string, strict bool) (h header, ok bool, err error) {
	lead := len(content) - len(strings.TrimLeftFunc(content, isSpace))
	bracket := -1
	if lead < len(content) && content[lead] == '"' {
		end := findClosingQuote(content, lead)
		if end < 0 || end+1 >= len(content) || content[end+1] != '[' {
			return h, false, nil
		}
		bracket = end + 1
	} else {
		bracket = findUnquoted(content, '[', 0)
		// A colon before the bracket ends the key: "key: x [2]: y" is a
		// key/value line whose value merely looks like a header.
		if bracket >= 0 && findUnquoted(content[:bracket], ':', 0) >= 0 {
			return h, false, nil
		}
	}
	if bracket < 0 {
		return h, false, nil
	}
	closeBracket := findUnquoted(content, ']', bracket)
	if closeBracket < 0 {
		return h, false, nil
	}
	afterBracket := closeBracket + 1
	fieldsEnd := afterBracket // index just past "}" when there is a field list
	brace := findUnquoted(content, '{', closeBracket)
	if brace >= 0 && brace < findUnquoted(content, ':', closeBracket) {
		if brace != afterBracket {
			if strict {
				return h, false, fmt.Errorf("unexpected %q between the array length and the field list", trim(content[afterBracket:brace]))
			}
			return h, false, nil
		}
		if end := findUnquoted(content, '}', brace); end >= 0 {
			fieldsEnd = end + 1
		}
	} else {
		brace = -1
	}
	colon := findUnquoted(content, ':', fieldsEnd)
	if colon < 0 {
		return h, false, nil
	}
	if colon != fieldsEnd {
		if strict {
			return h, false, fmt.Errorf("unexpected %q between the array header and its colon", trim(content[fieldsEnd:colon]))
		}
		return h, false, nil
	}
	length := content[bracket+1 : closeBracket]
	h.delim = ','
	if strings.HasSuffix(length, "\t") || strings.HasSuffix(length, "|") {
		h.delim = length[len(length)-1]
		length = length[:len(length)-1]
	}
	if !isLength(length) {
		if strict {
			return h, false, fmt.Errorf("array length %q is not a non-negative integer without leading zeros", content[bracket+1:closeBracket])
		}
		return h, false, nil
	}
	if h.n, err = strconv.Atoi(length); err != nil {
		if strict {
			return h, false, fmt.Errorf("array length %s is too large", length)
		}
		return h, false, nil
	}
	if brace >= 0 && fieldsEnd > afterBracket {
		list := content[brace+1 : fieldsEnd-1]
		for _, other := range []byte{',', '\t', '|'} {
			if other != h.delim && findUnquoted(list, other, 0) >= 0 {
				if strict {
					return h, false, fmt.Errorf("field list is separated by %q but the header declares %q", other, h.delim)
				}
				return h, false, nil
			}
		}
		h.fields = []string{}
		for _, f := range splitDelimited(list, h.delim) {
			name, err := parseStringToken(f)
			if err != nil {
				return h, false, err
			}
			h.fields = append(h.fields, name)
			h.quoted = append(h.quoted, strings.HasPrefix(f, `"`))
		}
	}
	if bracket > 0 {
		raw := trim(content[:bracket])
		h.hasKey = true
		h.quotedKey = strings.HasPrefix(raw, `"`)
		if h.key, err = parseStringToken(raw); err != nil {
			return h, false, err
		}
	}
	h.inline = trim(content[colon+1:])
	return h, true, nil
}

// isLength matches "0" / [1-9][0-9]*.
func isLength(s string) bool {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// isArrayHeaderContent reports whether a line may be a keyless header.
func isArrayHeaderContent(content string) bool {
	return strings.HasPrefix(trim(content), "[") && findUnquoted(content, ':', 0) >= 0
}

// isKeyValueContent reports whether content has a colon outside quotes.
func isKeyValueContent(content string) bool { return findUnquoted(content, ':', 0) >= 0 }

// isKeyValueLine reports whether a root line reads as "key: ...", for root
// form detection (spec §5).
func isKeyValueLine(content string) bool {
	if strings.HasPrefix(content, `"`) {
		end := findClosingQuote(content, 0)
		return end >= 0 && strings.Contains(content[end+1:], ":")
	}
	return strings.Contains(content, ":")
}

// isDataRow tells a tabular row from a key/value line at row depth: a row
// has no unquoted colon, or its first unquoted delimiter comes before it.
func isDataRow(content string, delim byte) bool {
	colon := findUnquoted(content, ':', 0)
	if colon < 0 {
		return true
	}
	d := findUnquoted(content, delim, 0)
	return d >= 0 && d < colon
}

// parseKey reads the key of a key/value line and returns what follows its colon.
func parseKey(content string) (key string, quoted bool, rest string, err error) {
	content = strings.TrimLeftFunc(content, isSpace)
	if strings.HasPrefix(content, `"`) {
		end := findClosingQuote(content, 0)
		if end < 0 {
			return "", false, "", errors.New("quoted key has no closing quote")
		}
		if key, err = unescape(content[1:end]); err != nil {
			return "", false, "", err
		}
		if end+1 >= len(content) || content[end+1] != ':' {
			return "", false, "", fmt.Errorf("missing colon after key %q", key)
		}
		return key, true, content[end+2:], nil
	}
	i := strings.IndexByte(content, ':')
	if i < 0 {
		return "", false, "", fmt.Errorf("missing colon after key %q", trim(content))
	}
	return trim(content[:i]), false, content[i+1:], nil
}

// findClosingQuote returns the index of the quote closing the string that
// opens at start, or -1.
func findClosingQuote(s string, start int) int {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// findUnquoted returns the index of the first c at or after start that is
// outside a quoted string, or -1.
func findUnquoted(s string, c byte, start int) int {
	in := false
	for i := start; i < len(s); i++ {
		switch {
		case in && s[i] == '\\':
			i++
		case s[i] == '"':
			in = !in
		case !in && s[i] == c:
			return i
		}
	}
	return -1
}

// splitDelimited splits inline values or a row on the active delimiter,
// outside quotes, trimming each token (spec §11.2). Empty tokens are kept.
func splitDelimited(s string, delim byte) []string {
	var out []string
	in := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch {
		case in && s[i] == '\\':
			i++
		case s[i] == '"':
			in = !in
		case !in && s[i] == delim:
			out = append(out, trim(s[start:i]))
			start = i + 1
		}
	}
	if start < len(s) || len(out) > 0 {
		out = append(out, trim(s[min(start, len(s)):]))
	}
	return out
}

// parsePrimitive types one value token (spec §4).
func parsePrimitive(token string) (any, error) {
	t := trim(token)
	switch {
	case t == "":
		return "", nil
	case t[0] == '"':
		return parseStringToken(t)
	case t == "true":
		return true, nil
	case t == "false":
		return false, nil
	case t == "null":
		return nil, nil
	case isNumberLiteral(t):
		s, err := canonicalNumber(t)
		if err != nil {
			return nil, err
		}
		return number(s), nil
	}
	return t, nil
}

// parseStringToken returns a quoted token unescaped, an unquoted one as is.
func parseStringToken(token string) (string, error) {
	t := trim(token)
	if !strings.HasPrefix(t, `"`) {
		return t, nil
	}
	end := findClosingQuote(t, 0)
	if end < 0 {
		return "", fmt.Errorf("unterminated string %s", t)
	}
	if end != len(t)-1 {
		return "", fmt.Errorf("unexpected %q after the closing quote", t[end+1:])
	}
	return unescape(t[1:end])
}

// unescape resolves the escapes of spec §7.1 and rejects every other one.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", errors.New(`string ends with a lone backslash`)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case '"':
			b.WriteByte('"')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`\u escape %q needs four hex digits`, s[i-1:])
			}
			cp, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil || strings.ContainsAny(s[i+1:i+5], "+-_") {
				return "", fmt.Errorf(`\u escape %q needs four hex digits`, s[i-1:i+5])
			}
			if cp >= 0xD800 && cp <= 0xDFFF {
				return "", fmt.Errorf(`\u%s is a surrogate; write characters beyond U+FFFF as literal UTF-8`, s[i+1:i+5])
			}
			b.WriteRune(rune(cp))
			i += 4
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return "", fmt.Errorf(`invalid escape \%c; only \\ \" \n \r \t and \uXXXX are allowed`, r)
		}
	}
	return b.String(), nil
}

// objBuilder collects an object's fields while decoding, remembering which
// keys were quoted (quoted keys are never path-expanded, spec §13.4).
type objBuilder struct {
	fields []Field
	quoted []bool
	index  map[string]int
}

func newObject() *objBuilder { return &objBuilder{index: map[string]int{}} }

// set adds a field. A repeated key is an error when strict (spec §14.4) and
// otherwise replaces the value in place (last write wins, first position).
func (o *objBuilder) set(key string, quoted bool, v any, strict bool, line int) error {
	if i, ok := o.index[key]; ok {
		if strict {
			return syntaxErr(line, "duplicate key %q", key)
		}
		o.fields[i].Value = v
		o.quoted[i] = quoted
		return nil
	}
	o.index[key] = len(o.fields)
	o.fields = append(o.fields, Field{Key: key, Value: v})
	o.quoted = append(o.quoted, quoted)
	return nil
}

// finish converts the decoded tree into the public representation.
func finish(v any) any {
	switch x := v.(type) {
	case *objBuilder:
		out := make(Object, len(x.fields))
		for i, f := range x.fields {
			out[i] = Field{Key: f.Key, Value: finish(f.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = finish(e)
		}
		return out
	case number:
		return json.Number(x)
	}
	return v
}
