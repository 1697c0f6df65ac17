package upstream

import (
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/redact"
)

// secrets is what the manager masks in everything it logs and every error
// it returns or reports in Status: the userinfo and query values of any URL
// (mcp-go's and net/http's errors embed the request URL, token and all),
// the config's secret values (issue 16) and the built-in token shapes.
func secrets(cfg *config.Config) *redact.Redactor {
	return redact.New(redact.Options{URLs: true, Literals: redact.Secrets(cfg)})
}

// maskedError is an error whose text had secrets masked; the chain stays
// for errors.Is and errors.As.
type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// mask returns err with its text masked (err itself when nothing was).
func (m *Manager) mask(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	masked := m.redact.String(msg)
	if masked == msg {
		return err
	}
	return &maskedError{err: err, msg: masked}
}
