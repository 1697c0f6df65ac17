package trajectory

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// The fact rule's bounds; the package doc states the rule.
const (
	MinFactLen = 8  // shortest token counted as a fact
	MinFactGap = 10 // fewest steps between a fact's Seen and Needed
)

// Fact is a piece of text the agent first saw in a tool result and needed
// verbatim in a tool call at least MinFactGap steps later.
type Fact struct {
	Text   string `json:"text"`
	Seen   int    `json:"seen"`   // the step whose results first hold it
	Needed int    `json:"needed"` // the step whose call arguments use it
}

var factToken = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_./:-]*[A-Za-z0-9_]`)

// codeLike reports whether tok reads as a path or a code name rather than a
// word of prose.
func codeLike(tok string) bool {
	if strings.ContainsAny(tok, "/._") {
		return true
	}
	for i := 1; i < len(tok); i++ {
		if tok[i-1] >= 'a' && tok[i-1] <= 'z' && tok[i] >= 'A' && tok[i] <= 'Z' {
			return true
		}
	}
	return false
}

// Facts returns t's later-needed facts, by the rule in the package doc.
func (t *Trajectory) Facts() []Fact {
	n := len(t.Steps)
	results := make([]string, n)
	said := make([]string, n)   // each step's assistant text and call arguments
	called := make([]string, n) // each step's call arguments alone
	args := make([][]string, n)
	for i, s := range t.Steps {
		results[i] = strings.Join(s.Results, "\n")
		for _, c := range s.Calls {
			args[i] = append(args[i], stringLeaves(c.Arguments)...)
		}
		called[i] = strings.Join(args[i], "\n")
		said[i] = s.Text + "\n" + called[i]
	}
	prelude := t.System + "\n" + t.TaskMessage

	done := map[string]bool{}
	var facts []Fact
	for j := 0; j < n; j++ {
		for _, a := range args[j] {
			for _, tok := range factToken.FindAllString(a, -1) {
				if len(tok) < MinFactLen || !codeLike(tok) || done[tok] {
					continue
				}
				done[tok] = true // a token's first use decides, found or not
				if f, ok := factFor(tok, j, prelude, results, said, called); ok {
					facts = append(facts, f)
				}
			}
		}
	}
	sort.Slice(facts, func(a, b int) bool {
		x, y := facts[a], facts[b]
		if x.Needed != y.Needed {
			return x.Needed < y.Needed
		}
		if x.Seen != y.Seen {
			return x.Seen < y.Seen
		}
		return x.Text < y.Text
	})
	return facts
}

// factFor checks tok, first used in step j's arguments, against the rule.
func factFor(tok string, j int, prelude string, results, said, called []string) (Fact, bool) {
	if strings.Contains(prelude, tok) {
		return Fact{}, false
	}
	seen := -1
	for i := 0; i < j; i++ {
		if strings.Contains(said[i], tok) {
			return Fact{}, false // the agent wrote it before it used it here
		}
		if strings.Contains(results[i], tok) {
			seen = i
			break
		}
	}
	if seen < 0 || j-seen < MinFactGap {
		return Fact{}, false
	}
	// tok is first a whole token at j, but a call in between may have held
	// it inside a longer one (repo/src/calc in a path); then the agent's own
	// calls carry it, not the old result alone.
	for i := seen + 1; i < j; i++ {
		if strings.Contains(called[i], tok) {
			return Fact{}, false
		}
	}
	return Fact{Text: tok, Seen: seen, Needed: j}, true
}

// stringLeaves returns every string value in a JSON document, in document
// order (object keys sorted, as encoding/json decodes them into a map).
func stringLeaves(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}
