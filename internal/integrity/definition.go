// Package integrity owns mcproxy's guard against tool poisoning (issue 16):
// each upstream tool's definition (name, title, description, input and
// output schemas, annotations) is hashed and compared with the one the user
// approved, and its text is screened for prompt-injection patterns. A tool
// whose definition changed since it was approved, or whose text is
// suspicious, is held: hidden from the catalog (retrieve_tools,
// describe_tool, direct-mode tools/list) and refused by call_tool with a
// message saying why and how to approve it, until `mcproxy tools approve`.
// Approvals live in one file in the data directory (Store), which a running
// proxy polls, so an approval takes effect without a restart (Reviewer).
//
// It does not talk to upstreams itself: the Reviewer judges the listings
// the catalog (internal/catalog) folds into its snapshots, on the catalog's
// goroutine; the Guard serves the front from those snapshots and runs the
// calls they allow on the upstream manager; the tools subcommand edits the
// Store.
package integrity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Definition is what a tool's hash covers, in canonical form: schemas and
// annotations re-encoded with sorted keys, so two servers that write the
// same JSON differently hash the same, and any change a model could read
// hashes differently.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// DefinitionOf extracts t's definition. Schemas come from RawInputSchema /
// RawOutputSchema when set (as the upstream package keeps them), else from
// the decoded fields.
func DefinitionOf(t mcp.Tool) Definition {
	d := Definition{Name: t.Name, Title: t.Title, Description: t.Description}
	switch {
	case len(t.RawInputSchema) > 0:
		d.InputSchema = canonical(t.RawInputSchema)
	case t.InputSchema.Type != "":
		d.InputSchema = canonicalOf(t.InputSchema)
	}
	switch {
	case len(t.RawOutputSchema) > 0:
		d.OutputSchema = canonical(t.RawOutputSchema)
	case t.OutputSchema.Type != "":
		d.OutputSchema = canonicalOf(t.OutputSchema)
	}
	if a := canonicalOf(t.Annotations); string(a) != "{}" && string(a) != "null" {
		d.Annotations = a
	}
	return d
}

// Hash is the definition's fingerprint: "sha256:" and the hex digest of
// its canonical JSON.
func (d Definition) Hash() string {
	sum := sha256.Sum256(d.encode())
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (d Definition) encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d) // strings and raw JSON that canonical produced: cannot fail
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// canonical re-encodes raw JSON with sorted object keys and no HTML
// escaping; JSON that does not decode is kept as a JSON string of its
// bytes, so it still hashes (and diffs) by content.
func canonical(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		b, _ := json.Marshal(string(raw))
		return b
	}
	return marshal(v)
}

func canonicalOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return canonical(b)
}

func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
