package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image sizes for token estimates
	_ "image/jpeg"
	_ "image/png"
	"slices"

	"github.com/mcproxy/mcproxy/internal/jsonspan"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// request is one model request taken apart: its messages in noa's terms,
// each part remembering the raw JSON it came from, and the rest of the
// request kept as it came.
type request struct {
	api api
	// top is the request object by key; every key but "messages" passes
	// through untouched unless the gateway adds to it (tools, system).
	top map[string]json.RawMessage
	// keys is top's keys in request order, so the request is re-emitted in
	// the order the client wrote it.
	keys []string
	// head is OpenAI's leading system and developer messages, which noa
	// never sees and which are always sent as they came.
	head []json.RawMessage
	msgs []message
	// parts and core are parallel: core[i] is parts[i] in noa's terms.
	parts []part
	core  []noa.CoreMessage
	// byID finds a part by its message id.
	byID map[string]int
}

// message is one provider message.
type message struct {
	raw  json.RawMessage
	role string
	// first and n locate the message's parts in request.parts.
	first, n int
}

// partKind is what a part holds.
type partKind int

const (
	kindText partKind = iota
	kindToolCall
	kindToolResult
	kindReasoning
	kindOpaque // an image, a document or a block the gateway does not know
	kindEmpty  // a message without content, kept so it is re-emitted
)

// part is one content part of a message.
type part struct {
	msg  int
	kind partKind
	// raw is the part's JSON: an Anthropic content block, an OpenAI
	// content part or tool call entry, or the JSON string of a message
	// whose content is a plain string (then str is set).
	raw json.RawMessage
	str bool
}

// idPrefix starts every message id the gateway derives; ids are chained
// hashes, so equal histories get equal ids and a changed message changes
// the id of everything after it.
const idPrefix = "h"

// chainID is the id of a part: a hash of the previous part's id, the
// message's role and envelope (its fields other than content), and the
// part's canonical JSON (without cache_control, which clients move from
// request to request).
func chainID(prev, role string, envelope []byte, raw json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte{0})
	h.Write([]byte(role))
	h.Write([]byte{0})
	h.Write(envelope)
	h.Write([]byte{0})
	h.Write(canonical(raw))
	return idPrefix + hex.EncodeToString(h.Sum(nil)[:12])
}

// canonical is raw with object keys sorted, space outside strings removed
// and every cache_control field dropped; strings and numbers stay as
// written (a client writes the same message the same way each time).
// Invalid JSON is returned as it is.
func canonical(raw json.RawMessage) []byte {
	if b, ok := canonicalize(make([]byte, 0, len(raw)), raw); ok {
		return b
	}
	return raw
}

// envelope is a message's canonical JSON without the fields that hold its
// parts.
func envelope(obj fields, partFields ...string) []byte {
	for _, f := range partFields {
		obj = obj.without(f)
	}
	return canonical(obj.encode())
}

// refusal is a request the gateway refuses rather than forwards, because
// it is over one of gateway.limits: msg says which and how to correct it.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// newRequest starts taking a request of the kind api apart: its top-level fields and
// its messages, each still raw. Both providers put the conversation in
// "messages". A body nested deeper than maxDepth is refused (a *refusal):
// nothing the gateway does with it may cost more than linear work, and
// the provider should not spend any on it either.
func newRequest(kind api, body []byte, maxDepth int) (*request, []json.RawMessage, error) {
	if jsonspan.Deeper(body, maxDepth) {
		return nil, nil, &refusal{fmt.Sprintf("mcproxy gateway: the request nests arrays and objects more than %d deep "+
			"(gateway.limits.max_json_depth); send flatter JSON (a tool's input counts with the levels around it), "+
			"or raise gateway.limits.max_json_depth in mcproxy's config", maxDepth)}
	}
	top, keys, err := decodeTop(body)
	if err != nil {
		return nil, nil, err
	}
	raws, ok := splitArray(top["messages"])
	if !ok {
		return nil, nil, fmt.Errorf(`"messages" is not an array of messages`)
	}
	return &request{api: kind, top: top, keys: keys, byID: map[string]int{}}, raws, nil
}

// decodeTop splits a JSON object into its members and its keys in order.
func decodeTop(body []byte) (map[string]json.RawMessage, []string, error) {
	f, ok := objectFields(body)
	if !ok {
		return nil, nil, fmt.Errorf("the body is not a JSON object")
	}
	return f.vals, f.keys, nil
}

// encodeTop writes a request object back, keys in their original order and
// any added keys after them.
func encodeTop(top map[string]json.RawMessage, keys []string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	write := func(k string) {
		if seen[k] {
			return
		}
		seen[k] = true
		v, ok := top[k]
		if !ok {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, k := range keys {
		write(k)
	}
	var extra []string
	for k := range top {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		write(k)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// add appends a part and its noa message, chaining its id.
func (q *request) add(p part, m noa.CoreMessage, role string, env []byte) {
	prev := ""
	if n := len(q.core); n > 0 {
		prev = q.core[n-1].ID
	}
	m.ID = chainID(prev, role, env, p.raw)
	q.byID[m.ID] = len(q.parts)
	q.parts = append(q.parts, p)
	q.core = append(q.core, m)
}

// Opaque parts (images, documents, unknown blocks) reach noa as a
// placeholder whose text names its token estimate (session.OpaqueText);
// every counter of a session reads the estimate back (session.CountOpaque),
// so noa weighs the part at what the model pays for it.
func opaqueText(what string, tokens int) string { return session.OpaqueText(what, tokens) }

// CountTokens wraps a token counter (nil means noa.DefaultCountTokens) so
// that the placeholder of an opaque part counts as its estimate, as the
// session host counts it (session.CountOpaque).
func CountTokens(base noa.TokenCountFn) noa.TokenCountFn { return session.CountOpaque(base) }

// imageTokens estimates an image the way Anthropic documents it (about
// width*height/750 tokens, images scaled to fit 1568 px on the long side)
// when its size is known, and 1600 (a full-size image) otherwise.
func imageTokens(w, h int) int {
	if w <= 0 || h <= 0 {
		return 1600
	}
	if long := max(w, h); long > 1568 {
		w, h = w*1568/long, h*1568/long
	}
	return max(1, w*h/750)
}

// imageSize reads the pixel size from the head of a base64 PNG, JPEG or GIF
// (0, 0 when it cannot).
func imageSize(b64 string) (int, int) {
	head := b64[:min(len(b64), 64<<10)]
	head = head[:len(head)/4*4]
	data, err := base64.StdEncoding.DecodeString(head)
	if err != nil && len(data) == 0 {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}
