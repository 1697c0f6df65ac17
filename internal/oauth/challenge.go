package oauth

import (
	"net/http"
	"strings"
)

// challenge is what a 401 or 403 said in its WWW-Authenticate Bearer
// challenge (RFC 6750 §3, RFC 9728 §5.1).
type challenge struct {
	resourceMetadata string   // the protected resource metadata URL hint
	scopes           []string // the scopes the resource asks for
	err              string   // invalid_token, insufficient_scope, ...
	present          bool     // a Bearer challenge was there at all
}

// parseChallenge reads every WWW-Authenticate line of h and returns the
// first Bearer challenge's parameters.
func parseChallenge(h http.Header) challenge {
	for _, line := range h.Values("WWW-Authenticate") {
		for _, c := range splitChallenges(line) {
			if !strings.EqualFold(c.scheme, "bearer") {
				continue
			}
			ch := challenge{present: true, resourceMetadata: c.params["resource_metadata"], err: c.params["error"]}
			ch.scopes = strings.Fields(c.params["scope"])
			return ch
		}
	}
	return challenge{}
}

type rawChallenge struct {
	scheme string
	params map[string]string
}

// splitChallenges parses one header value into challenges: a scheme token
// followed by comma-separated auth-params (token or quoted-string values);
// a new scheme starts where a token is not followed by '='.
func splitChallenges(s string) []rawChallenge {
	var out []rawChallenge
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == ',' || s[i] == '\t') {
			i++
		}
		start := i
		for i < len(s) && s[i] != ' ' && s[i] != ',' && s[i] != '=' && s[i] != '\t' {
			i++
		}
		tok := s[start:i]
		if tok == "" {
			break
		}
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j < len(s) && s[j] == '=' && len(out) > 0 {
			// a parameter of the current challenge
			j++
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			val, n := readValue(s[j:])
			out[len(out)-1].params[strings.ToLower(tok)] = val
			i = j + n
			continue
		}
		out = append(out, rawChallenge{scheme: tok, params: map[string]string{}})
		i = j
	}
	return out
}

// readValue reads a token or a quoted string at the start of s and returns
// it and how many bytes it took.
func readValue(s string) (string, int) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				return b.String(), i + 1
			default:
				b.WriteByte(s[i])
			}
		}
		return b.String(), len(s)
	}
	i := strings.IndexAny(s, ", \t")
	if i < 0 {
		return s, len(s)
	}
	return s[:i], i
}
