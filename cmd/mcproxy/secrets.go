package main

import (
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/redact"
)

// redactor masks the config's secret values (header, env and URL query
// values, auth_token, api keys), the built-in token shapes and the config's
// redact patterns; with urls, also every URL's userinfo and query values
// (issue 16). Logs get urls; session records do not, since the links in a
// tool's result are content. cfg has been validated, so its patterns
// compile.
func redactor(cfg *config.Config, urls bool) *redact.Redactor {
	pats, _ := redact.Compile(cfg.Redact)
	return redact.New(redact.Options{URLs: urls, Literals: redact.Secrets(cfg), Patterns: pats})
}
