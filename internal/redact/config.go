package redact

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Compile turns the config's redact list into patterns, naming the entry
// that does not compile.
func Compile(exprs []string) ([]Pattern, error) {
	out := make([]Pattern, 0, len(exprs))
	for i, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("redact[%d]: %w", i, err)
		}
		p := Pattern{Name: fmt.Sprintf("redact[%d]", i), RE: re}
		if prefix, _ := re.LiteralPrefix(); prefix != "" {
			p.hints = []string{prefix}
		}
		out = append(out, p)
	}
	return out, nil
}

// Secrets lists the values in cfg that are secrets: every server's header
// values, env values, URL query values and command-line flag values whose
// names say they are secret (or whose values look like random tokens), URL
// userinfo, auth_token and the embeddings api_key.
func Secrets(cfg *config.Config) []string {
	if cfg == nil {
		return nil
	}
	var out []string
	add := func(name, value string) {
		if value != "" && (SecretName(name) || tokenLike(value)) {
			out = append(out, value)
		}
	}
	for _, s := range cfg.MCPServers {
		for k, v := range s.Headers {
			add(k, v)
		}
		for k, v := range s.Env {
			add(k, v)
		}
		out = append(out, argSecrets(s.Args)...)
		out = append(out, urlSecrets(s.URL)...)
	}
	if cfg.AuthToken != "" {
		out = append(out, cfg.AuthToken)
	}
	if cfg.Embeddings.APIKey != "" {
		out = append(out, cfg.Embeddings.APIKey)
	}
	out = append(out, urlSecrets(cfg.Embeddings.URL)...)
	return out
}

// argSecrets are the values of secret-named flags in a command line
// ("--api-key V", "--token=V") and arguments that look like tokens.
func argSecrets(args []string) []string {
	var out []string
	for i, a := range args {
		if name, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") && SecretName(name) {
			out = append(out, v)
			continue
		}
		if strings.HasPrefix(a, "-") && SecretName(a) && i+1 < len(args) {
			out = append(out, args[i+1])
			continue
		}
		if tokenLike(a) && !strings.ContainsAny(a, "/\\") {
			out = append(out, a)
		}
	}
	return out
}

// urlSecrets are the userinfo and query values of raw.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		out = append(out, u.User.Username())
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// tokenLike reports whether v looks like a generated secret: 20 characters
// or more, no spaces, with both letters and digits.
func tokenLike(v string) bool {
	if len(v) < 20 {
		return false
	}
	var letters, digits bool
	for _, r := range v {
		switch {
		case unicode.IsSpace(r):
			return false
		case unicode.IsDigit(r):
			digits = true
		case unicode.IsLetter(r):
			letters = true
		}
	}
	return letters && digits
}
