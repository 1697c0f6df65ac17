package arms

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TronArm is tron_dedup, our own small take on TRON-style schema sharing:
// tools whose canonical input schemas are byte-identical share one named
// class, defined once at the top of a listing,
//
//	class C1a2b3c4d = {"properties":...}
//
// and each tool entry names its class instead of repeating the schema:
//
//	server:tool|description|C1a2b3c4d
//
// Choices, and what they cost:
//   - Two schemas share a class only when their canonical JSON is identical,
//     descriptions inside included. Nothing is lost (LowerBound is false), but
//     schemas that differ only in wording do not merge, so the savings are
//     those of exact sharing, not of structural sharing.
//   - A class name is "C" plus the first 8 hex digits of the SHA-256 of the
//     canonical schema. The name then depends on the schema alone, so the
//     per-tool index mapping and the listing agree without shared state and
//     whatever the tool order. It costs a few tokens more than C1, C2, ...
//   - Every schema gets a class, even one used by a single tool, so the format
//     stays uniform and the price of a class is visible in the numbers.
//   - "|" and newlines inside descriptions are not escaped: escaping would
//     change the very token counts being measured.
//
// Sharing happens only in EncodeListing; EncodeTool returns the unshared form
// server:tool|description|<canonical schema>, so per-tool figures stay
// comparable with the other arms.
type TronArm struct{}

// NewTron returns the tron_dedup arm.
func NewTron() *TronArm { return &TronArm{} }

// Name implements Arm.
func (*TronArm) Name() string { return TronName }

// IndexAltering implements Arm: the index ingests the class name in place of
// the schema.
func (*TronArm) IndexAltering() bool { return true }

// LowerBound implements Arm: all descriptions are kept.
func (*TronArm) LowerBound() bool { return false }

// EncodeTool implements Arm: name|description|schema, without classes.
func (*TronArm) EncodeTool(t config.Tool) (string, error) {
	if err := checkTool(t); err != nil {
		return "", err
	}
	schema, _, err := canonicalSchema(t)
	if err != nil {
		return "", err
	}
	return tronEntry(t, schema), nil
}

// EncodeListing implements Arm: one class line per distinct schema, in the
// order schemas first appear, a blank line, then one entry per tool.
func (*TronArm) EncodeListing(ts []config.Tool) (string, error) {
	var classes, entries []string
	defined := map[string]bool{}
	for i, t := range ts {
		if err := checkTool(t); err != nil {
			return "", fmt.Errorf("encoding listing entry %d: %w", i, err)
		}
		schema, _, err := canonicalSchema(t)
		if err != nil {
			return "", fmt.Errorf("encoding listing entry %d: %w", i, err)
		}
		ref := ""
		if schema != "" {
			ref = tronClass(schema)
			if !defined[ref] {
				defined[ref] = true
				classes = append(classes, "class "+ref+" = "+schema)
			}
		}
		entries = append(entries, tronEntry(t, ref))
	}
	if len(classes) == 0 {
		return strings.Join(entries, "\n"), nil
	}
	return strings.Join(classes, "\n") + "\n\n" + strings.Join(entries, "\n"), nil
}

// EncodeIndexMetadata implements Arm: ParamsJSON is the tool's class name
// (empty when it has no schema); the rest is unchanged.
func (*TronArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	if err := checkTool(t); err != nil {
		return config.ToolMetadata{}, err
	}
	schema, _, err := canonicalSchema(t)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	ref := ""
	if schema != "" {
		ref = tronClass(schema)
	}
	return config.ToolMetadata{Name: t.Name, ServerName: t.Server, Description: t.Description, ParamsJSON: ref}, nil
}

// tronClass is the content-addressed class name of a canonical schema.
func tronClass(schema string) string {
	sum := sha256.Sum256([]byte(schema))
	return "C" + hex.EncodeToString(sum[:4])
}

// tronEntry is name|description, plus |params when params is not empty.
func tronEntry(t config.Tool, params string) string {
	s := callName(t) + "|" + t.Description
	if params != "" {
		s += "|" + params
	}
	return s
}
