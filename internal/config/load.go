package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcproxy/mcproxy/internal/fuzzy"
)

// Load reads the config file at path and returns it parsed, with ${VAR}
// references expanded from the process environment, defaults applied and
// validated. Every problem found is reported, each prefixed by its field
// path; the result is nil whenever the error is not.
func Load(path string) (*Config, error) {
	cfg, _, err := LoadWithNotes(path)
	return cfg, err
}

// LoadWithNotes is Load that also returns the notes ParseWithNotes makes
// about keys of other MCP clients' files that were accepted and ignored.
func LoadWithNotes(path string) (*Config, []string, error) { return load(path, false) }

// LoadServing is LoadWithNotes the way mcproxy's commands read their own
// config: see ParseServing.
func LoadServing(path string) (*Config, []string, error) { return load(path, true) }

func load(path string, lenient bool) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, notes, err := parse(data, os.LookupEnv, lenient)
	if err != nil {
		if n := countErrors(err); n > 1 {
			return nil, nil, fmt.Errorf("loading config %s: %d problems:\n%w", path, n, err)
		}
		return nil, nil, fmt.Errorf("loading config %s: %w", path, err)
	}
	return cfg, notes, nil
}

// Parse decodes a config file's bytes strictly: unknown keys, duplicate keys,
// wrong JSON types and malformed durations are errors naming the field.
// Every string value (not object keys) has ${VAR} and ${VAR:-default}
// expanded with getenv, whose shape is that of os.LookupEnv; see the package
// documentation for the exact rules. Once the file decodes cleanly, Parse
// applies defaults and runs Validate (validating a half-decoded file would
// only add noise). The returned error joins every problem found in the
// failing stage (errors.Join), each a *FieldError.
func Parse(data []byte, getenv func(string) (string, bool)) (*Config, error) {
	cfg, _, err := ParseWithNotes(data, getenv)
	return cfg, err
}

// ParseWithNotes is Parse for a file that may be another MCP client's
// (issue 18): the keys of foreign.go are accepted, and each one found
// gets a note saying what became of it ("disabled": true means "enabled":
// false; Claude Desktop's "globalShortcut" and Cline's "autoApprove" are
// ignored). The notes are sorted by field path.
func ParseWithNotes(data []byte, getenv func(string) (string, bool)) (*Config, []string, error) {
	return parse(data, getenv, false)
}

// ParseServing is ParseWithNotes the way serve, search, a live reload and
// the other commands read mcproxy's own config (issue 30): a problem
// inside one server's entry (an unset ${VAR}, a bad field) sets that server
// aside, in Config.Broken with its problems and out of MCPServers, instead
// of refusing the file, so one bad server never takes the others down.
// Problems with mcproxy's own keys (or with the mcpServers map as a whole)
// still refuse the file, with every problem found, the servers' included.
func ParseServing(data []byte, getenv func(string) (string, bool)) (*Config, []string, error) {
	return parse(data, getenv, true)
}

// parse is ParseWithNotes, with the servers whose entries have problems
// set aside when lenient.
func parse(data []byte, getenv func(string) (string, bool), lenient bool) (*Config, []string, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	root, dups, err := parseTree(data)
	if err != nil {
		return nil, nil, err
	}
	d := decoder{getenv: getenv, errs: dups}
	var cfg Config
	d.decode(root, reflect.ValueOf(&cfg).Elem(), "")
	names := serverKeys(root)
	broken := map[string][]error{}
	if len(d.errs) > 0 {
		if !lenient || !byServer(d.errs, names, broken) {
			return nil, nil, errors.Join(d.errs...)
		}
		for name := range broken {
			delete(cfg.MCPServers, name)
		}
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		all := unjoin(err)
		if !lenient || !byServer(all, names, broken) {
			for _, name := range slices.Sorted(maps.Keys(broken)) { // the decoding problems set aside
				all = append(all, broken[name]...)
			}
			return nil, nil, errors.Join(all...)
		}
		for name := range broken {
			delete(cfg.MCPServers, name)
		}
	}
	if len(broken) > 0 {
		cfg.Broken = make(map[string]string, len(broken))
		for name, errs := range broken {
			cfg.Broken[name] = joinProblems(errs)
		}
	}
	sort.Strings(d.notes)
	return &cfg, d.notes, nil
}

// serverKeys is the names of the file's mcpServers entries, longest first
// so that a name holding a dot ("a.b", refused later as a name) claims its
// own paths before "a" does.
func serverKeys(root *node) []string {
	i := slices.Index(root.keys, "mcpServers")
	if i < 0 || root.vals[i].kind != 'o' {
		return nil
	}
	names := slices.Clone(root.vals[i].keys)
	sort.Slice(names, func(a, b int) bool { return len(names[a]) > len(names[b]) })
	return names
}

// byServer files each of errs under the server whose entry it is about,
// in broken. It reports false, filing nothing, when one of errs is about
// anything else: mcproxy's own keys are not set aside.
func byServer(errs []error, names []string, broken map[string][]error) bool {
	owners := make([]string, len(errs))
	for i, err := range errs {
		var fe *FieldError
		if !errors.As(err, &fe) {
			return false
		}
		for _, name := range names {
			p := "mcpServers." + name
			if rest, ok := strings.CutPrefix(fe.Path, p); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
				owners[i] = name
				break
			}
		}
		if owners[i] == "" {
			return false
		}
	}
	for i, err := range errs {
		broken[owners[i]] = append(broken[owners[i]], err)
	}
	return true
}

// joinProblems is one server's problems on one line, as status lines and
// retrieve_tools answers show them.
func joinProblems(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// FieldError is one problem with one field of the config. Path is dotted
// from the top of the file ("mcpServers.git.init_timeout", "args[2]"); it is
// empty for a problem with the file as a whole.
type FieldError struct {
	Path    string
	Message string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

func fieldErr(path, format string, args ...any) error {
	return &FieldError{Path: path, Message: fmt.Sprintf(format, args...)}
}

// node is one JSON value, kept with its object keys in file order so that
// duplicate keys can be reported (encoding/json silently keeps the last).
type node struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str   string
	num   json.Number
	b     bool
	keys  []string
	vals  []*node
	elems []*node
}

func (n *node) kindName() string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	default:
		return "null"
	}
}

// parseTree reads exactly one JSON object from data. A syntax error stops
// it; duplicate keys do not: they come back in dups (the first occurrence is
// kept) so they are reported together with every other problem.
func parseTree(data []byte) (root *node, dups []error, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := treeParser{dec: dec, data: data}
	root, err = p.value("")
	if err != nil {
		return nil, nil, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
			end++
		}
		return nil, nil, fieldErr("", "%s: unexpected data after the top-level object", p.position(end))
	}
	if root.kind != 'o' {
		return nil, nil, fieldErr("", "the config must be a JSON object, got %s", root.kindName())
	}
	return root, p.dups, nil
}

type treeParser struct {
	dec  *json.Decoder
	data []byte
	dups []error
}

func (p *treeParser) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fieldErr("", "%s: invalid JSON: %v", p.position(se.Offset), se)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return fieldErr("", "invalid JSON: unexpected end of file")
	}
	return fieldErr("", "invalid JSON: %v", err)
}

// position turns a byte offset into "line L, column C" (1-based).
func (p *treeParser) position(off int64) string {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	before := p.data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

func (p *treeParser) value(path string) (*node, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: 'o'}
			seen := map[string]bool{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.syntax(err)
				}
				key := kt.(string) // the decoder only yields string keys
				child := joinPath(path, key)
				v, err := p.value(child)
				if err != nil {
					return nil, err
				}
				if seen[key] {
					p.dups = append(p.dups, fieldErr(child, "duplicate key (the file defines it more than once; keep one)"))
					continue
				}
				seen[key] = true
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.syntax(err)
			}
			return n, nil
		case '[':
			n := &node{kind: 'a'}
			for p.dec.More() {
				v, err := p.value(fmt.Sprintf("%s[%d]", path, len(n.elems)))
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.syntax(err)
			}
			return n, nil
		}
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'n', num: t}, nil
	case bool:
		return &node{kind: 'b', b: t}, nil
	case nil:
		return &node{kind: 'z'}, nil
	}
	return nil, fieldErr(path, "unexpected JSON token %v", tok)
}

// countErrors counts the problems in an error built by errors.Join.
func countErrors(err error) int { return len(unjoin(err)) }

// unjoin is the problems in an error built by errors.Join, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func joinPath(path, key string) string {
	if key == "" {
		return path
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// decoder fills Go values from a node tree by reflection over the json tags
// of Config and ServerConfig, so a field added to those types is decoded
// (and its key accepted) without touching this file. It collects every
// error instead of stopping at the first.
type decoder struct {
	getenv func(string) (string, bool)
	errs   []error
	notes  []string
}

func (d *decoder) fail(path, format string, args ...any) {
	d.errs = append(d.errs, fieldErr(path, format, args...))
}

var (
	durationType   = reflect.TypeOf(Duration(0))
	inheritEnvType = reflect.TypeOf(InheritEnv{})
)

func (d *decoder) decode(n *node, v reflect.Value, path string) {
	if n.kind == 'z' {
		return // null leaves the zero value: "not set"
	}
	switch v.Type() {
	case durationType:
		d.decodeDuration(n, v, path)
		return
	case inheritEnvType:
		d.decodeInheritEnv(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), path)
		v.Set(elem)
	case reflect.String:
		if n.kind != 's' {
			d.fail(path, "want a string, got %s", n.kindName())
			return
		}
		s, err := expand(n.str, d.getenv)
		if err != nil {
			d.fail(path, "%v", err)
			return
		}
		v.SetString(s)
	case reflect.Bool:
		if n.kind != 'b' {
			d.fail(path, "want true or false, got %s", n.kindName())
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind != 'n' {
			d.fail(path, "want a whole number, got %s", n.kindName())
			return
		}
		i, err := strconv.ParseInt(n.num.String(), 10, 64)
		if err != nil || v.OverflowInt(i) {
			d.fail(path, "want a whole number, got %s", n.num)
			return
		}
		v.SetInt(i)
	case reflect.Float64: // compress_at, prices (gateway.models.<name>.prices)
		if n.kind != 'n' {
			d.fail(path, "want a number, got %s", n.kindName())
			return
		}
		f, err := strconv.ParseFloat(n.num.String(), 64)
		if err != nil {
			d.fail(path, "want a number, got %s", n.num)
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		if n.kind != 'a' {
			d.fail(path, "want an array, got %s", n.kindName())
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.elems), len(n.elems))
		for i, e := range n.elems {
			d.decode(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.kind != 'o' {
			d.fail(path, "want an object, got %s", n.kindName())
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for i, k := range n.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(n.vals[i], e, joinPath(path, k))
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	default:
		// Only reachable if someone adds a field of a kind this decoder does
		// not know; the round-trip test over every field catches that.
		d.fail(path, "internal error: cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *node, v reflect.Value, path string) {
	if n.kind != 'o' {
		d.fail(path, "want an object, got %s", n.kindName())
		return
	}
	fields := jsonFields(v.Type())
	for i, k := range n.keys {
		idx, ok := fields[k]
		child := joinPath(path, k)
		if !ok {
			if d.foreign(v, n, i, child) {
				continue
			}
			d.fail(child, "unknown key%s", suggestKey(k, fields))
			continue
		}
		d.decode(n.vals[i], v.Field(idx), child)
	}
}

// decodeInheritEnv takes true, false or a list of variable names.
func (d *decoder) decodeInheritEnv(n *node, v reflect.Value, path string) {
	var e InheritEnv
	switch n.kind {
	case 'b':
		e.All = n.b
	case 'a':
		d.decode(n, reflect.ValueOf(&e.Names).Elem(), path)
	default:
		d.fail(path, "want true, false or a list of variable names, got %s", n.kindName())
		return
	}
	v.Set(reflect.ValueOf(e))
}

func (d *decoder) decodeDuration(n *node, v reflect.Value, path string) {
	if n.kind != 's' {
		d.fail(path, "want a duration string such as \"30s\" or \"2m\", got %s", n.kindName())
		return
	}
	s, err := expand(n.str, d.getenv)
	if err != nil {
		d.fail(path, "%v", err)
		return
	}
	dur, err := parseDuration(s)
	if err != nil {
		d.fail(path, "%v", err)
		return
	}
	if dur <= 0 {
		d.fail(path, "must be > 0, got %q (leave the key out for the default)", s)
		return
	}
	v.SetInt(int64(dur))
}

// jsonFields maps each json key of struct type t to its field index.
func jsonFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = i
	}
	return m
}

// keyHints covers keys other MCP clients use that mean something else here.
var keyHints = map[string]string{
	"servers":     ` (VS Code's "servers" is spelled "mcpServers" here; mcproxy import FILE converts a VS Code mcp.json)`,
	"autoApprove": ` (mcproxy has no approval list; use "allowed_tools" or "disabled_tools" to filter tools)`,
	"alwaysAllow": ` (mcproxy has no approval list; use "allowed_tools" or "disabled_tools" to filter tools)`,
}

// suggestKey returns ` (did you mean "x"?)` for the known key closest to
// key, or "" when none is close enough to be a plausible typo.
func suggestKey(key string, fields map[string]int) string {
	if h, ok := keyHints[key]; ok {
		return h
	}
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	sort.Strings(known)
	best, bestDist := "", 1<<30
	for _, k := range known {
		dist := fuzzy.Distance(strings.ToLower(key), strings.ToLower(k))
		if strings.ReplaceAll(strings.ToLower(key), "_", "") == strings.ReplaceAll(strings.ToLower(k), "_", "") {
			dist = 0 // allowedTools vs allowed_tools
		}
		if dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" || bestDist > max(2, len(key)/3) {
		return fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
