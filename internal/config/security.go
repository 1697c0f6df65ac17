package config

import (
	"fmt"
	"regexp"
)

// validateRedact checks that every redact pattern compiles and cannot
// match the empty string (which would mask between every character).
func validateRedact(exprs []string) []error {
	var errs []error
	for i, e := range exprs {
		path := fmt.Sprintf("redact[%d]", i)
		re, err := regexp.Compile(e)
		if err != nil {
			errs = append(errs, fieldErr(path, "not a regular expression (Go syntax): %v", err))
			continue
		}
		if re.MatchString("") {
			errs = append(errs, fieldErr(path, "%q matches the empty string; make it match the secret itself (e.g. `tok_[A-Za-z0-9]{20,}`)", e))
		}
	}
	return errs
}

// Quarantined reports whether tools of server s seen for the first time
// are held for approval: s's own quarantine when set, else the top-level
// one.
func (c *Config) Quarantined(server string) bool {
	if s, ok := c.MCPServers[server]; ok && s.Quarantine != nil {
		return *s.Quarantine
	}
	return c.Quarantine
}
