package arms

import "github.com/mcproxy/mcproxy/internal/config"

// BaselineArm is baseline_json: the full definition of each tool, rendered
// by CanonicalToolText. It is what loading every tool up front costs, and the
// measure every other arm is compared with.
type BaselineArm struct{}

// NewBaseline returns the baseline_json arm.
func NewBaseline() *BaselineArm { return &BaselineArm{} }

// Name implements Arm.
func (*BaselineArm) Name() string { return BaselineName }

// IndexAltering implements Arm: the baseline is the production mapping.
func (*BaselineArm) IndexAltering() bool { return false }

// LowerBound implements Arm: nothing is dropped.
func (*BaselineArm) LowerBound() bool { return false }

// EncodeTool implements Arm with CanonicalToolText.
func (*BaselineArm) EncodeTool(t config.Tool) (string, error) { return CanonicalToolText(t) }

// EncodeListing implements Arm: the tools joined by ListingSeparator; there is
// nothing shared to pay once.
func (*BaselineArm) EncodeListing(ts []config.Tool) (string, error) {
	return joinListing(ts, CanonicalToolText)
}

// EncodeIndexMetadata implements Arm with BaselineMetadata.
func (*BaselineArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	return BaselineMetadata(t)
}
