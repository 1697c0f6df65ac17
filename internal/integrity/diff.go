package integrity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Diff renders what differs between the approved definition old and the
// held one cur, field by field, as line diffs ("-" old, "+" new, two
// spaces for context); schemas are shown pretty-printed. Invisible
// characters are spelled out (<U+200B>) so a reviewer sees them.
func Diff(old, cur Definition) string {
	var b strings.Builder
	field := func(name, a, c string) {
		if a == c {
			return
		}
		fmt.Fprintf(&b, "%s:\n", name)
		for _, l := range lineDiff(strings.Split(visible(a), "\n"), strings.Split(visible(c), "\n")) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	field("name", old.Name, cur.Name)
	field("title", old.Title, cur.Title)
	field("description", old.Description, cur.Description)
	field("inputSchema", pretty(old.InputSchema), pretty(cur.InputSchema))
	field("outputSchema", pretty(old.OutputSchema), pretty(cur.OutputSchema))
	field("annotations", pretty(old.Annotations), pretty(cur.Annotations))
	return b.String()
}

// Show renders one definition whole, for a tool held with nothing approved
// to compare with.
func Show(d Definition) string {
	return Diff(Definition{}, d)
}

func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// visible spells out the characters Screen calls invisible.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if _, hidden := invisible(string(r)); hidden {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxDiffLines bounds the longest-common-subsequence table.
const maxDiffLines = 2000

// lineDiff is a plain LCS line diff.
func lineDiff(a, b []string) []string {
	if len(a) == 1 && a[0] == "" {
		a = nil
	}
	if len(b) == 1 && b[0] == "" {
		b = nil
	}
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		var out []string
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	return out
}
