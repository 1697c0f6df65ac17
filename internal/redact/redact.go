// Package redact owns masking secrets in text: the userinfo and query values
// of URLs, literal values the config says are secret (header values, secret
// env values, URL query values), and token shapes matched by patterns
// (built-in ones for common API tokens plus the config's own). It is used
// wherever mcproxy writes text that could carry a secret somewhere lasting:
// log lines (Core), errors returned to clients (upstream), and session
// transcripts and archives (session.Options.Redact).
//
// It is pure: no I/O and no state beyond what New is given.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces each secret.
const Mask = "[REDACTED]"

// urlRE finds URLs in free text. A URL ends at whitespace, a quote or an
// angle bracket, which is how Go's errors ("Post \"http://...\": ...") and
// most logs delimit them.
var urlRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s"'<>` + "`" + `]+`)

// URL returns raw with its userinfo and every query value masked
// ("https://[REDACTED]@host/p?api_key=[REDACTED]&v=[REDACTED]"). Query
// names, the host and the path stay, so the URL still says where it points.
// raw is returned unchanged when it has neither userinfo nor a query.
func URL(raw string) string {
	head, query, hasQuery := strings.Cut(raw, "?")
	var frag string
	if hasQuery {
		query, frag, _ = strings.Cut(query, "#")
	}
	out := maskUserinfo(head)
	if !hasQuery {
		return out
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue {
			parts[i] = name + "=" + Mask
		} else if p != "" && !looksLikeName(p) {
			parts[i] = Mask // a bare value (?TOKEN)
		}
	}
	out += "?" + strings.Join(parts, "&")
	if frag != "" {
		out += "#" + frag
	}
	return out
}

// looksLikeName reports whether a query part without "=" reads as a flag
// (short, a word) rather than a value that could be a token.
func looksLikeName(p string) bool {
	if len(p) > 16 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// maskUserinfo masks the "user:password@" of scheme://user:password@host.
func maskUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return s
	}
	return scheme + "://" + Mask + "@" + authority[at+1:] + path
}

// URLs masks every URL in text as URL does.
func URLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlRE.ReplaceAllStringFunc(text, URL)
}

// Pattern is a named regular expression for a secret. When it has
// capturing groups, only what they capture is masked (so "Bearer " stays
// and the token goes); otherwise the whole match is.
type Pattern struct {
	Name string
	RE   *regexp.Regexp
	// hints, when set, are substrings one of which every match contains:
	// text with none of them is skipped without running the expression.
	hints []string
}

// Builtin are the token shapes masked without any configuration.
var Builtin = []Pattern{
	{Name: "github token", RE: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{Name: "github fine-grained token", RE: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), hints: []string{"github_pat_"}},
	{Name: "openai/anthropic key", RE: regexp.MustCompile(`\bsk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}`), hints: []string{"sk-"}},
	{Name: "stripe key", RE: regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`), hints: []string{"k_live_", "k_test_"}},
	{Name: "aws access key id", RE: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), hints: []string{"AKIA", "ASIA"}},
	{Name: "google api key", RE: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), hints: []string{"AIza"}},
	{Name: "slack token", RE: regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`), hints: []string{"xox"}},
	{Name: "jwt", RE: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}`), hints: []string{"eyJ"}},
	{Name: "bearer credential", RE: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*)`), hints: []string{"earer", "EARER"}},
	{Name: "basic credential", RE: regexp.MustCompile(`(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/]{8,}=*)`), hints: []string{"uthorization", "UTHORIZATION"}},
	{Name: "private key", RE: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`), hints: []string{"PRIVATE KEY"}},
}

// Redactor masks secrets in text. A nil *Redactor masks nothing. It is safe
// for concurrent use.
type Redactor struct {
	literals *strings.Replacer // nil: none
	patterns []Pattern
	urls     bool
	// byPair lists the patterns' hints of two bytes or more by their first
	// two bytes, for finding them all in one pass over a large text.
	byPair map[uint16][]string
	pairs  *[1 << 16]bool
}

// Options say what a Redactor masks.
type Options struct {
	// Literals are exact secret values (config header values, secret env
	// values, URL query values). Values shorter than MinLiteral are
	// ignored: masking "1" or "true" everywhere would ruin the text and
	// hide nothing.
	Literals []string
	// Patterns are masked in addition to Builtin (unless NoBuiltin).
	Patterns  []Pattern
	NoBuiltin bool
	// URLs masks the userinfo and query values of every URL in the text
	// (right for log lines and errors; too much for tool results, whose
	// links are content).
	URLs bool
}

// MinLiteral is the shortest literal secret a Redactor masks.
const MinLiteral = 6

// New builds a Redactor.
func New(opts Options) *Redactor {
	r := &Redactor{urls: opts.URLs}
	var lits []string
	for _, l := range opts.Literals {
		if len(l) < MinLiteral || slices.Contains(lits, l) {
			continue
		}
		lits = append(lits, l)
		// The same value as it appears inside a URL.
		if e := url.QueryEscape(l); e != l && !slices.Contains(lits, e) {
			lits = append(lits, e)
		}
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(lits, func(a, b string) int { return len(b) - len(a) })
	if len(lits) > 0 {
		pairs := make([]string, 0, 2*len(lits))
		for _, l := range lits {
			pairs = append(pairs, l, Mask)
		}
		r.literals = strings.NewReplacer(pairs...)
	}
	if !opts.NoBuiltin {
		r.patterns = append(r.patterns, Builtin...)
	}
	r.patterns = append(r.patterns, opts.Patterns...)
	r.byPair, r.pairs = map[uint16][]string{}, new([1 << 16]bool)
	for _, p := range r.patterns {
		for _, h := range p.hints {
			if strings.ContainsAny(h, "[]") || strings.Contains(Mask, h) {
				// Masking could make this hint (String's scan assumes
				// it cannot): look for every hint pattern by pattern.
				r.byPair, r.pairs = nil, nil
				return r
			}
			if k := pairOf(h, 0); len(h) >= 2 && !slices.Contains(r.byPair[k], h) {
				r.byPair[k], r.pairs[k] = append(r.byPair[k], h), true
			}
		}
	}
	return r
}

func pairOf(s string, i int) uint16 { return uint16(s[i])<<8 | uint16(s[i+1]) }

// scanMin is the size from which String looks for every hint in one pass
// (hintsIn) rather than for each pattern's hints in turn: a 5 MB payload
// spent some 35 ms in the nineteen searches (issue 13).
const scanMin = 64 << 10

// hintsIn returns the hints of two bytes or more that s holds.
func (r *Redactor) hintsIn(s string) map[string]bool {
	found := map[string]bool{}
	for i := 0; i+1 < len(s); i++ {
		if !r.pairs[pairOf(s, i)] {
			continue
		}
		for _, h := range r.byPair[pairOf(s, i)] {
			if !found[h] && strings.HasPrefix(s[i:], h) {
				found[h] = true
			}
		}
	}
	return found
}

// String returns s with every secret r knows masked.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	if r.urls {
		s = URLs(s)
	}
	if r.literals != nil {
		s = r.literals.Replace(s)
	}
	holds := func(h string) bool { return strings.Contains(s, h) }
	if len(s) >= scanMin && r.pairs != nil {
		// Masking only ever adds "[REDACTED]", which holds no hint and
		// makes none with its neighbours, so what the scan found before
		// the first pattern ran still covers every hint the text holds
		// after it.
		found := r.hintsIn(s)
		holds = func(h string) bool {
			if len(h) < 2 {
				return strings.Contains(s, h)
			}
			return found[h]
		}
	}
	for _, p := range r.patterns {
		if len(p.hints) > 0 && !slices.ContainsFunc(p.hints, holds) {
			continue
		}
		s = maskPattern(p.RE, s)
	}
	return s
}

// maskPattern masks re's matches in s: their capturing groups when re has
// any, else the whole match.
func maskPattern(re *regexp.Regexp, s string) string {
	if re.NumSubexp() == 0 {
		return re.ReplaceAllLiteralString(s, Mask)
	}
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		for g := 2; g+1 < len(m); g += 2 {
			if m[g] < 0 || m[g] < last {
				continue
			}
			b.WriteString(s[last:m[g]])
			b.WriteString(Mask)
			last = m[g+1]
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretName matches names of headers, env variables and query parameters
// whose values are secrets.
var secretName = regexp.MustCompile(`(?i)key|token|secret|passw|pwd|auth|cookie|session|credential|signature|sig$|private|bearer`)

// SecretName reports whether a header, env variable or query parameter of
// this name holds a secret by its name.
func SecretName(name string) bool { return secretName.MatchString(name) }
