package arms

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/toon"
)

// ToonListingArm is toon_listing: tools rendered as TOON, our in-tree encoder
// of Token-Oriented Object Notation. Each tool is the ordered object
// {name, description, inputSchema}, the schema being the tool's JSON schema
// as a TOON value (object keys sorted, so key order in the input does not
// matter). It is measured as is, even where TOON loses: deeply nested JSON
// Schema is not the uniform tabular data TOON is built for.
type ToonListingArm struct{}

// NewToonListing returns the toon_listing arm.
func NewToonListing() *ToonListingArm { return &ToonListingArm{} }

// Name implements Arm.
func (*ToonListingArm) Name() string { return ToonListingName }

// IndexAltering implements Arm: the index ingests the schema as TOON text
// instead of JSON.
func (*ToonListingArm) IndexAltering() bool { return true }

// LowerBound implements Arm: descriptions are kept (quoted and escaped as
// TOON requires, never shortened).
func (*ToonListingArm) LowerBound() bool { return false }

// EncodeTool implements Arm: the tool as one TOON object document.
func (*ToonListingArm) EncodeTool(t config.Tool) (string, error) {
	obj, err := toonTool(t)
	if err != nil {
		return "", err
	}
	s, err := toon.Encode(obj, toon.Options{})
	if err != nil {
		return "", fmt.Errorf("encoding tool %q as TOON: %w", callName(t), err)
	}
	return s, nil
}

// EncodeListing implements Arm: the listing is one TOON array, so its header
// is paid once.
func (*ToonListingArm) EncodeListing(ts []config.Tool) (string, error) {
	items := make([]any, 0, len(ts))
	for i, t := range ts {
		obj, err := toonTool(t)
		if err != nil {
			return "", fmt.Errorf("encoding listing entry %d: %w", i, err)
		}
		items = append(items, obj)
	}
	s, err := toon.Encode(items, toon.Options{})
	if err != nil {
		return "", fmt.Errorf("encoding listing as TOON: %w", err)
	}
	return s, nil
}

// EncodeIndexMetadata implements Arm: ParamsJSON is the schema as TOON text
// (empty when the tool has no schema); the rest is unchanged.
func (*ToonListingArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	if err := checkTool(t); err != nil {
		return config.ToolMetadata{}, err
	}
	_, schema, err := canonicalSchema(t)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	params := ""
	if schema != nil {
		if params, err = toon.Encode(schema, toon.Options{}); err != nil {
			return config.ToolMetadata{}, fmt.Errorf("encoding schema of tool %q as TOON: %w", callName(t), err)
		}
	}
	return config.ToolMetadata{Name: t.Name, ServerName: t.Server, Description: t.Description, ParamsJSON: params}, nil
}

// toonTool is the ordered TOON object of a tool; a tool without a schema has
// no inputSchema field.
func toonTool(t config.Tool) (toon.Object, error) {
	if err := checkTool(t); err != nil {
		return nil, err
	}
	_, schema, err := canonicalSchema(t)
	if err != nil {
		return nil, err
	}
	obj := toon.Object{{Key: "name", Value: callName(t)}, {Key: "description", Value: t.Description}}
	if schema != nil {
		obj = append(obj, toon.Field{Key: "inputSchema", Value: schema})
	}
	return obj, nil
}
