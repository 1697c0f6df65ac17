package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// ResultText is the text a result is recorded as: its text blocks joined by
// newlines, with each image, audio clip and resource as a short placeholder
// giving its type and size (their bytes are not text the model reads as
// tokens, and the upstream can produce them again). A result with no content
// but structured content is recorded as that JSON.
func ResultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func contentText(c mcp.Content) string {
	switch v := c.(type) {
	case mcp.TextContent:
		return v.Text
	case *mcp.TextContent:
		return v.Text
	case mcp.ImageContent:
		return placeholder("image", v.MIMEType, base64Size(v.Data))
	case *mcp.ImageContent:
		return placeholder("image", v.MIMEType, base64Size(v.Data))
	case mcp.AudioContent:
		return placeholder("audio", v.MIMEType, base64Size(v.Data))
	case *mcp.AudioContent:
		return placeholder("audio", v.MIMEType, base64Size(v.Data))
	case mcp.EmbeddedResource:
		return resourcePlaceholder(v.Resource)
	case *mcp.EmbeddedResource:
		return resourcePlaceholder(v.Resource)
	case mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", v.URI)
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", v.URI)
	default:
		return fmt.Sprintf("[content %T]", c)
	}
}

func resourcePlaceholder(r mcp.ResourceContents) string {
	switch v := r.(type) {
	case mcp.TextResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, len(v.Text))
	case *mcp.TextResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, len(v.Text))
	case mcp.BlobResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, base64Size(v.Blob))
	case *mcp.BlobResourceContents:
		return placeholder("resource "+v.URI, v.MIMEType, base64Size(v.Blob))
	default:
		return "[resource]"
	}
}

func placeholder(kind, mime string, size int) string {
	if mime == "" {
		mime = "unknown type"
	}
	return fmt.Sprintf("[%s, %s, %s]", kind, mime, byteSize(size))
}

// base64Size is the decoded size of base64 data.
func base64Size(s string) int {
	n := len(s) * 3 / 4
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return max(n, 0)
}

func byteSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
}

func isText(c mcp.Content) bool {
	switch c.(type) {
	case mcp.TextContent, *mcp.TextContent:
		return true
	}
	return false
}

func compactJSON(b *strings.Builder, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return err
	}
	b.Write(buf.Bytes())
	return nil
}

// cutResult is a result returned head-and-tail.
type cutResult struct {
	// text is what the client gets; rel where the original is archived;
	// ref the ref the pointer names.
	text, rel, ref string
}

// cutOversize archives and cuts a result above MaxResultTokens, rewriting
// m.Text to what the client will hold. It returns nil when the result fits,
// and also when archiving fails: then the result goes back whole, because
// cutting what cannot be recovered would lose it.
func (h *Host) cutOversize(m *noa.CoreMessage) *cutResult {
	limit := h.opts.MaxResultTokens
	total := h.opts.Count(m.Text)
	if total <= limit {
		return nil
	}
	// The ref the result will get: noa assigns it on the next turn, in
	// order, so syncing a copy of the state now gives the same one.
	probe := h.synced(append(h.msgs[:len(h.msgs):len(h.msgs)], *m), h.st)
	ref, ok := noa.RefForRaw(probe.MessageRefs, m.ID)
	handle := ref
	if !ok {
		handle = m.ID // a protected tool's result has no ref
	}
	rel, err := h.arch.WriteResult(m.ID, []byte(m.Text))
	if err != nil {
		h.log.Error("archiving an oversize result; returning it whole", zap.String("tool", m.ToolName), zap.Int("tokens", total), zap.Error(err))
		return nil
	}
	// Leave room for the ref tag and the nudge's framing.
	text := headTail(m.Text, total, max(limit-64, limit/2), h.opts.Count, handle)
	m.Text = text
	return &cutResult{text: text, rel: rel, ref: ref}
}

// headTail keeps the start and the end of text (about two thirds head, one
// third tail) within budget tokens, joined by a line carrying noa's
// truncation marker and the read_archive call that returns the cut bytes.
func headTail(text string, total, budget int, count noa.TokenCountFn, handle string) string {
	n := len(text)
	keep := int(int64(n) * int64(budget) / int64(max(total, 1)))
	var out string
	for range 8 {
		head := cutBack(text, keep*2/3)
		tail := cutForward(text, n-(keep-keep*2/3))
		if tail < head {
			tail = head
		}
		out = text[:head] + cutNote(head, tail, n, handle) + text[tail:]
		got := count(out)
		if got <= budget || keep == 0 {
			return out
		}
		// Shrink by the overshoot, plus a margin: token density is uneven.
		keep = int(float64(keep) * float64(budget) / float64(got) * 0.95)
	}
	return out
}

func cutNote(from, to, size int, handle string) string {
	return fmt.Sprintf("\n\n%s: bytes %d-%d of %d were cut from the middle of this result. The original is archived verbatim; "+
		"read the cut part with read_archive {\"ref\":%q,\"offset\":%d,\"limit\":%d}; if the answer comes in pages, continue from the offset each page names until byte %d.]\n\n",
		noa.TruncationMarker, from, to, size, handle, from, to-from, to)
}

// cutBack returns a cut position at or before i on a rune boundary,
// preferring the end of a line within the last 256 bytes.
func cutBack(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	if i <= 0 {
		return 0
	}
	if j := strings.LastIndexByte(s[max(0, i-256):i], '\n'); j >= 0 {
		return max(0, i-256) + j + 1
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// cutForward returns a cut position at or after i on a rune boundary,
// preferring the start of a line within the next 256 bytes.
func cutForward(s string, i int) int {
	if i <= 0 {
		return 0
	}
	if i >= len(s) {
		return len(s)
	}
	if j := strings.IndexByte(s[i:min(len(s), i+256)], '\n'); j >= 0 {
		return i + j + 1
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
