package upstream

import "strings"

// tidyError drops a wrapping context that repeats the one right inside it:
// mcp-go wraps a failed HTTP request twice, so its errors read "failed to
// send request: failed to send request: Post ..." (issue 18). Contexts are
// the ": "-separated parts; a URL's "://" is not one.
func tidyError(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}
