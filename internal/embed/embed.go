// Package embed is mcproxy's optional dense retrieval: it embeds each tool's
// text with a provider speaking the OpenAI-compatible POST /v1/embeddings API
// (Ollama, LM Studio, llama.cpp's server, vLLM, OpenAI), keeps the unit
// vectors in memory and on disk, ranks tools by cosine similarity to the
// query, and fuses that ranking with BM25's by reciprocal rank fusion.
//
// Dense retrieval bridges paraphrases that share no word with the tool
// ("will I need an umbrella" against a weather tool), which BM25 cannot. It
// is strictly an addition: when the provider is down, slow or misconfigured,
// search answers from BM25 alone, the outage is logged once, and the provider
// is tried again after a pause. A failing query embedding never fails
// retrieve_tools.
//
// The package owns its disk cache (<data_dir>/embeddings-cache) and one
// worker goroutine per Dense, which embeds tools in the background so that
// indexing never waits on the provider; Close stops it. It never logs the API key and never logs a URL's
// credentials or query string.
package embed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/config"
)

// ErrUnavailable means the embedding provider failed recently and is not
// being tried again until its retry interval has passed; search falls back
// to BM25 meanwhile.
var ErrUnavailable = errors.New("embedding provider unavailable")

// MaxTextBytes caps the text embedded for one tool. Some tool descriptions
// run to pages; the head carries the purpose, and a cap keeps every text
// inside the input window of small models (OpenAI rejects inputs over 8191
// tokens, and roughly four bytes make a token).
const MaxTextBytes = 4000

// ToolText is the text embedded for one tool: its name split into words, the
// server it belongs to, its description and its parameters' names and
// descriptions, e.g.
//
//	get weather forecast (server weather): Get the forecast for a city.
//	Parameters: city: name of the city; days: how many days ahead.
//
// Names are split (snake_case, camelCase, kebab-case, dotted) because
// embedding tokenizers see "get_weather_forecast" as fragments rather than
// words. The server name is included because queries often name it
// ("github create issue"). The JSON Schema's own vocabulary ("type",
// "object", "properties") is dropped: every tool shares it, so it only pulls
// all vectors towards each other. ParamsJSON that is not a JSON object (an
// arm's own rendering) is used as it is. The text is cut at MaxTextBytes.
func ToolText(t config.ToolMetadata) string {
	var b strings.Builder
	b.WriteString(strings.Join(splitIdentifier(t.Name), " "))
	if t.ServerName != "" {
		b.WriteString(" (server ")
		b.WriteString(t.ServerName)
		b.WriteString(")")
	}
	if d := strings.TrimSpace(t.Description); d != "" {
		b.WriteString(": ")
		b.WriteString(d)
	}
	if p := paramsText(t.ParamsJSON); p != "" {
		b.WriteString("\nParameters: ")
		b.WriteString(p)
	}
	return truncate(b.String(), MaxTextBytes)
}

// splitIdentifier splits a tool name into lower-case words at _, -, ., /,
// spaces, lower-to-upper case changes and letter-digit boundaries;
// "getHTTPResponse_v2" becomes [get http response v 2].
func splitIdentifier(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush()
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush()
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush() // the "R" in "HTTPResponse" starts a word
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// paramsText renders a JSON Schema's properties as "name: description"
// pairs, nested objects' properties after their parent (up to a small
// depth), in name order so the text, and so the cache key, is stable.
func paramsText(params string) string {
	trimmed := strings.TrimSpace(params)
	if trimmed == "" {
		return ""
	}
	if !strings.HasPrefix(trimmed, "{") {
		return trimmed
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(trimmed), &schema); err != nil {
		return trimmed
	}
	var parts []string
	collectParams(schema, 0, &parts)
	return strings.Join(parts, "; ")
}

const maxParamDepth = 3

func collectParams(schema map[string]any, depth int, parts *[]string) {
	if depth > maxParamDepth {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sub, _ := props[name].(map[string]any)
		part := strings.Join(splitIdentifier(name), " ")
		if d, ok := sub["description"].(string); ok && strings.TrimSpace(d) != "" {
			part += ": " + strings.TrimSpace(d)
		} else if d, ok := sub["title"].(string); ok && strings.TrimSpace(d) != "" {
			part += ": " + strings.TrimSpace(d)
		}
		if enum, ok := sub["enum"].([]any); ok {
			var vals []string
			for _, v := range enum {
				if s, ok := v.(string); ok {
					vals = append(vals, s)
				}
			}
			if len(vals) > 0 {
				part += " (one of " + strings.Join(vals, ", ") + ")"
			}
		}
		*parts = append(*parts, part)
		if sub != nil {
			collectParams(sub, depth+1, parts)
			if items, ok := sub["items"].(map[string]any); ok {
				collectParams(items, depth+1, parts)
			}
		}
	}
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cacheKey identifies one embedded text in one vector space: the SHA-256 of
// the embedder's fingerprint (model and dimensions) and the exact text sent,
// prefix included. A changed description, a changed prefix or another model
// all give another key, so a stale vector is never reused.
func cacheKey(fingerprint, text string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(fingerprint))))
	h.Write([]byte{0})
	h.Write([]byte(fingerprint))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}
