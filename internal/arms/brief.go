package arms

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/config"
)

// BriefName is the registry key of BriefArm.
const BriefName = "brief_sig"

// BriefArm is brief_sig, compact_sig's signature with the description cut
// to what picks the tool (issue 17):
//
//	server:tool(req:type, opt?:type)|Opening sentences of the description.
//
// The parameters are compact_sig's, except that an enum of more than
// briefMaxEnum literals shows its first ones and "…". The description keeps
// the whole sentences of its first paragraph that fit in
// briefMaxDescription characters (a longer first sentence is cut at a word,
// marked "…"). Everything left out is one describe_tool call away,
// and nothing is lost to ranking: the index ingests every tool's full
// metadata whatever arm renders (EncodeIndexMetadata is the baseline's).
type BriefArm struct{}

// NewBrief returns the brief_sig arm.
func NewBrief() *BriefArm { return &BriefArm{} }

// Limits of brief_sig's rendering.
const (
	briefMaxEnum        = 4
	briefMaxDescription = 200
)

// Name implements Arm.
func (*BriefArm) Name() string { return BriefName }

// IndexAltering implements Arm: the index ingests the baseline mapping.
func (*BriefArm) IndexAltering() bool { return false }

// LowerBound implements Arm: descriptions are shortened.
func (*BriefArm) LowerBound() bool { return true }

// EncodeTool implements Arm.
func (*BriefArm) EncodeTool(t config.Tool) (string, error) {
	params, err := sigParams(t, briefMaxEnum)
	if err != nil {
		return "", err
	}
	sig := callName(t) + "(" + params + ")"
	if d := briefDescription(t.Description); d != "" {
		sig += "|" + d
	}
	return sig, nil
}

// EncodeListing implements Arm: signatures, one per line.
func (a *BriefArm) EncodeListing(ts []config.Tool) (string, error) {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		s, err := a.EncodeTool(t)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n"), nil
}

// EncodeIndexMetadata implements Arm: the baseline mapping.
func (*BriefArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	return BaselineMetadata(t)
}

// briefDescription is d's first paragraph on one line, as many of its
// whole sentences as fit in briefMaxDescription characters; a first
// sentence longer than that is cut at a word and marked "…".
func briefDescription(d string) string {
	d = strings.Join(strings.Fields(firstParagraph(d)), " ")
	if utf8.RuneCountInString(d) <= briefMaxDescription {
		return d
	}
	end := 0
	for i, r := range d {
		if utf8.RuneCountInString(d[:i]) >= briefMaxDescription {
			break
		}
		// A sentence ends at ". ", "! " or "? " (not "e.g. x" or "v1.2").
		if (r == '.' || r == '!' || r == '?') && i+1 < len(d) && d[i+1] == ' ' && !abbreviation(d[:i]) {
			end = i + 1
		}
	}
	if end > 0 {
		return d[:end]
	}
	cut := d
	n := 0
	for i := range d {
		if n == briefMaxDescription {
			cut = d[:i]
			break
		}
		n++
	}
	if sp := strings.LastIndexFunc(cut, unicode.IsSpace); sp > briefMaxDescription/2 {
		cut = cut[:sp]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// firstParagraph is d up to its first blank line.
func firstParagraph(d string) string {
	d = strings.TrimSpace(d)
	if i := strings.Index(d, "\n\n"); i >= 0 {
		return d[:i]
	}
	return d
}

// abbreviation reports whether the text before a period ends with a short
// abbreviation ("e.g", "i.e", "etc", "vs") rather than a sentence.
func abbreviation(before string) bool {
	w := before[strings.LastIndexFunc(before, unicode.IsSpace)+1:]
	switch strings.ToLower(strings.TrimLeft(w, "(")) {
	case "e.g", "i.e", "etc", "vs", "eg", "ie", "approx", "incl", "no":
		return true
	}
	return false
}
