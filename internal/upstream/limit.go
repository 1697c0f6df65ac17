package upstream

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MessageTooLargeError is why an upstream's message was not read: one
// stdout line of a stdio upstream, or one HTTP answer or event, longer
// than limits.max_message_bytes. The call waiting for it fails with it; a
// stdio upstream is restarted.
type MessageTooLargeError struct {
	Server string
	Limit  int64
	// Restarted is set for a stdio upstream, whose stream cannot be
	// resynchronised mid-line: it is restarted.
	Restarted bool
}

func (e *MessageTooLargeError) Error() string {
	what := "stopped reading it"
	if e.Restarted {
		what = "stopped reading it and restarts the server"
	}
	return fmt.Sprintf("upstream %q sent a message larger than %d bytes (limits.max_message_bytes), so mcproxy %s; ask for less (a narrower query, a smaller page), or raise limits.max_message_bytes in the config", e.Server, e.Limit, what)
}

// limitTransport bounds what an HTTP upstream's answers may cost: a JSON
// body at limit bytes, an event stream at limit bytes per event. Past the
// bound the body's Read fails with a *MessageTooLargeError, which fails
// the request waiting for it (or ends the event stream, which mcp-go then
// reopens) without the message ever being read whole.
type limitTransport struct {
	base   http.RoundTripper
	server string
	limit  int64
	// tooLarge is told of each answer cut short (mcp-go's transports do
	// not pass a body's read error on to the caller).
	tooLarge func(error)
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &limitedBody{
		rc: resp.Body, server: t.server, limit: t.limit, tooLarge: t.tooLarge,
		events: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"),
	}
	return resp, nil
}

// limitedBody is an HTTP answer's body read under limitTransport's bound.
type limitedBody struct {
	rc       io.ReadCloser
	server   string
	limit    int64
	events   bool // an event stream: the bound is per event (a blank line ends one)
	tooLarge func(error)

	run  int64 // bytes of the current message so far
	prev byte  // the last byte read other than '\r'
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	for i := 0; i < n; i++ {
		c := p[i]
		if b.events && c == '\n' && b.prev == '\n' {
			b.run = 0
		}
		if c != '\r' {
			b.prev = c
		}
		b.run++
		if b.run > b.limit {
			err := error(&MessageTooLargeError{Server: b.server, Limit: b.limit})
			if b.tooLarge != nil {
				b.tooLarge(err)
			}
			return i, err
		}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// CloseIdleConnections closes the base transport's idle connections (what
// http.Client.CloseIdleConnections asks of its transport).
func (t *limitTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
