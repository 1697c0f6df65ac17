package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrUnknownServer is wrapped by Call when the server name is not in the
// config's mcpServers map.
var ErrUnknownServer = errors.New("unknown upstream server")

// ErrUnknownTool is wrapped by Call when the server is up but does not expose
// the tool: it never listed it, or allowed_tools/disabled_tools hide it.
var ErrUnknownTool = errors.New("unknown tool")

// DownError is returned by Call when the target server cannot take calls:
// it is down (and the reconnect backoff does not allow an attempt right
// now), or the attempt made on demand failed, or it is disabled.
type DownError struct {
	Server string
	State  State
	// LastError is why the server is down ("" when disabled).
	LastError string
	// RetryAt is when the next reconnect attempt is due; zero when none is
	// scheduled (disabled, or shutting down).
	RetryAt time.Time
}

func (e *DownError) Error() string {
	if e.State == StateDisabled {
		return fmt.Sprintf("upstream %q is disabled in the config (mcpServers.%s.enabled is false)", e.Server, e.Server)
	}
	if e.State == StateMisconfigured {
		return fmt.Sprintf("upstream %q is not started: its entry in the config has problems: %s (fix them and save the file; a running mcproxy applies it)", e.Server, e.LastError)
	}
	if e.State == StateNeedsSignIn && e.LastError != "" {
		return e.LastError // it names the server and the command to run
	}
	msg := fmt.Sprintf("upstream %q is %s", e.Server, e.State)
	if e.LastError != "" {
		msg += ": " + e.LastError
	}
	if !e.RetryAt.IsZero() {
		wait := time.Until(e.RetryAt).Round(100 * time.Millisecond)
		if wait < 0 {
			wait = 0
		}
		msg += fmt.Sprintf("; next reconnect attempt at %s (in %s), call again after that",
			e.RetryAt.UTC().Format("15:04:05.0Z"), wait)
	}
	return msg
}

// TimeoutError is returned by Call when a tools/call outlives its call
// timeout. The upstream is told to stop with notifications/cancelled.
type TimeoutError struct {
	Server, Tool string
	// Limit is the call timeout that was hit.
	Limit time.Duration
	// Setting names where Limit comes from: "mcpServers.<name>.call_timeout",
	// "call_timeout", or the built-in default.
	Setting string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("call to %s:%s timed out after %s (limit set by %s); the upstream was asked to cancel it",
		e.Server, e.Tool, e.Limit, e.Setting)
}

// Unwrap lets errors.Is(err, context.DeadlineExceeded) match.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Timeout reports true, as net.Error timeouts do.
func (e *TimeoutError) Timeout() bool { return true }

// CallError is returned by Call when one tools/call to an HTTP upstream
// failed at the transport level (an HTTP error status, say a 502 from a
// reverse proxy in front of it, or a dropped connection) while the upstream
// still answers ping. The server stays ready; only this call failed, and
// it may or may not have run upstream.
type CallError struct {
	Server, Tool string
	// Status is the HTTP status the request was answered with; 0 when it
	// failed without one.
	Status int
	// Err is the transport's error.
	Err error
}

// maxCauseLen bounds how much of the transport's error (which may carry a
// whole HTML error page) CallError repeats.
const maxCauseLen = 300

func (e *CallError) Error() string {
	what := "failed at the HTTP level"
	if e.Status != 0 {
		what = fmt.Sprintf("got HTTP %d %s from upstream %q or a proxy in front of it", e.Status, http.StatusText(e.Status), e.Server)
	}
	cause := tidyError(strings.TrimSpace(e.Err.Error()))
	if len(cause) > maxCauseLen {
		cause = strings.ToValidUTF8(cause[:maxCauseLen], "") + "..."
	}
	return fmt.Sprintf("call to %s:%s %s (%s); upstream %q still answers ping, so it stays connected. "+
		"The call may or may not have run there: retry it if running it twice is safe", e.Server, e.Tool, what, cause, e.Server)
}

// Unwrap returns the transport's error.
func (e *CallError) Unwrap() error { return e.Err }
