package config

import (
	"fmt"
	"os"
	"strings"
)

// expand replaces ${VAR} and ${VAR:-default} in s using getenv.
//
// The rules, kept close to POSIX shells and Docker Compose so a pasted config
// behaves as its author expects:
//   - ${VAR} is VAR's value; an unset VAR is an error (a set but empty VAR
//     expands to "").
//   - ${VAR:-default} is VAR's value when VAR is set and non-empty, else
//     default. The default may itself contain ${...} references.
//   - $$ is a literal $, so $${HOME} yields the text ${HOME}.
//   - Any other $ is kept as is ("pa$word" stays "pa$word").
//
// Names are [A-Za-z_][A-Za-z0-9_]*. The error names the variable and says how
// to fix the reference; the caller adds the field path.
func expand(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := matchBrace(s, i+1)
			if end < 0 {
				ref := s[i:]
				if len(ref) > 24 { // enough to find it; the rest may be a secret
					ref = ref[:24] + "..."
				}
				return "", fmt.Errorf("unterminated %q: close it with } (write $${ for a literal ${)", ref)
			}
			v, err := expandRef(s[i+2:end], getenv)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i = end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), nil
}

// ExpandEnv is expand with the process environment, for a caller that
// reads one field of a file the loader refused (mcproxy status).
func ExpandEnv(s string) (string, error) { return expand(s, os.LookupEnv) }

// matchBrace returns the index of the '}' closing the '{' at open, counting
// nested ${...} so a default may hold references of its own; -1 if none.
func matchBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			if i == open || s[i-1] == '$' {
				depth++
			}
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// expandRef resolves the inside of one ${...}: "VAR" or "VAR:-default".
func expandRef(ref string, getenv func(string) (string, bool)) (string, error) {
	name, def, hasDefault := strings.Cut(ref, ":-")
	if !validVarName(name) {
		return "", fmt.Errorf("${%s}: %q is not a variable name (want letters, digits and _, not starting with a digit; write $${ for a literal ${)", ref, name)
	}
	val, ok := getenv(name)
	if !hasDefault {
		if !ok {
			return "", fmt.Errorf("${%s} is not set: export %s, or give a default with ${%s:-value}", name, name, name)
		}
		return val, nil
	}
	if ok && val != "" {
		return val, nil
	}
	return expand(def, getenv)
}

func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
