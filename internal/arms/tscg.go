package arms

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Runner runs the TSCG Node shim (bench/tscg/shim.mjs). Run writes input to
// the shim, one JSON object per line, {"tool_id", "tool"}, and returns the
// shim's output, one line per input line, {"tool_id", "encoded"} or
// {"tool_id", "error"}. Available returns nil when the shim can run, else an
// error wrapping ErrArmUnavailable that says what is missing.
// armsio.NodeRunner is the real implementation; this package never starts a
// process itself.
type Runner interface {
	Available() error
	Run(ctx context.Context, input []byte) ([]byte, error)
}

// TSCGArm is tscg: tool definitions compiled by the reference TSCG
// implementation, @tscg/core, run in Node through a Runner. A listing is one
// run of the shim. Each tool goes to the compiler in the Anthropic tool shape
// with its call name ("server:tool") as name and its canonical schema (an
// empty object schema when it has none). TSCG is a deterministic compiler and
// the shim pins its options, so the same input gives the same output.
//
// The compiled text of a tool is documented, for @tscg/core 1.4.3, to have
// the shape
//
//	<name>: <rewritten description>
//	  <param>[*] (<type>): <desc> | ...   (absent when there are no params)
//	[CLOSURE:<name>(<required params>)]
//
// which EncodeIndexMetadata splits into the index fields. The package cannot
// be installed from the registry this project reaches, so that shape is
// checked here only against a stand-in module; output that does not start
// with "<name>: " makes EncodeIndexMetadata fail rather than guess.
type TSCGArm struct {
	runner Runner
}

// NewTSCG returns the tscg arm using r. A nil r gives an arm that reports
// itself unavailable.
func NewTSCG(r Runner) *TSCGArm { return &TSCGArm{runner: r} }

// Name implements Arm.
func (*TSCGArm) Name() string { return TSCGName }

// IndexAltering implements Arm: TSCG rewrites both the description and the
// parameter text.
func (*TSCGArm) IndexAltering() bool { return true }

// LowerBound implements Arm: TSCG shortens descriptions (it drops filler
// phrases), so its savings are a lower bound.
func (*TSCGArm) LowerBound() bool { return true }

// Available implements AvailabilityChecker by asking the runner.
func (a *TSCGArm) Available() error {
	if a.runner == nil {
		return fmt.Errorf("tscg: no Node runner configured (build the arm with armsio.NewTSCG): %w", ErrArmUnavailable)
	}
	return a.runner.Available()
}

// EncodeTool implements Arm: a run of the shim with one tool.
func (a *TSCGArm) EncodeTool(t config.Tool) (string, error) {
	return a.EncodeToolContext(context.Background(), t)
}

// EncodeToolContext is EncodeTool with a context that stops the shim.
func (a *TSCGArm) EncodeToolContext(ctx context.Context, t config.Tool) (string, error) {
	out, err := a.compile(ctx, []config.Tool{t})
	if err != nil {
		return "", err
	}
	return out[0], nil
}

// EncodeListing implements Arm: one run of the shim for all tools, the
// compiled tools joined by ListingSeparator (TSCG has no shared preamble).
func (a *TSCGArm) EncodeListing(ts []config.Tool) (string, error) {
	return a.EncodeListingContext(context.Background(), ts)
}

// EncodeListingContext is EncodeListing with a context that stops the shim.
func (a *TSCGArm) EncodeListingContext(ctx context.Context, ts []config.Tool) (string, error) {
	if len(ts) == 0 {
		return "", nil
	}
	out, err := a.compile(ctx, ts)
	if err != nil {
		return "", err
	}
	return strings.Join(out, ListingSeparator), nil
}

// EncodeIndexMetadata implements Arm. Name and ServerName stay; Description
// is the rewritten description from the header line(s) (without the
// "<name>: " prefix, which would repeat the name the index already has);
// ParamsJSON is the compiled parameter lines and the CLOSURE line. The
// compiled text is exactly callName + ": " + Description + "\n" + ParamsJSON
// (without the newline when ParamsJSON is empty), so the index sees what the
// arm renders and nothing else.
func (a *TSCGArm) EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error) {
	enc, err := a.EncodeTool(t)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	desc, params, err := splitTSCG(callName(t), enc)
	if err != nil {
		return config.ToolMetadata{}, err
	}
	return config.ToolMetadata{Name: t.Name, ServerName: t.Server, Description: desc, ParamsJSON: params}, nil
}

// splitTSCG splits compiled text into its description and parameter parts.
// The parameter part is the trailing run of lines indented by two spaces,
// plus the final CLOSURE line when there is one; everything between the
// "<name>: " prefix and that run is the description, which may span lines.
func splitTSCG(name, enc string) (desc, params string, err error) {
	prefix := name + ": "
	if !strings.HasPrefix(enc, prefix) {
		return "", "", fmt.Errorf("tscg output for %q does not start with %q", name, prefix)
	}
	lines := strings.Split(strings.TrimPrefix(enc, prefix), "\n")
	start := len(lines)
	if start > 1 && strings.HasPrefix(lines[start-1], "[CLOSURE:") {
		start--
	}
	for start > 1 && strings.HasPrefix(lines[start-1], "  ") {
		start--
	}
	return strings.Join(lines[:start], "\n"), strings.Join(lines[start:], "\n"), nil
}

// tscgRequest is one input line of the shim. Tool is in the Anthropic tool
// shape @tscg/core accepts.
type tscgRequest struct {
	ToolID string   `json:"tool_id"`
	Tool   tscgTool `json:"tool"`
}

type tscgTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// tscgReply is one output line of the shim.
type tscgReply struct {
	ToolID  *string `json:"tool_id"`
	Encoded *string `json:"encoded"`
	Error   *string `json:"error"`
}

// emptySchema stands in for a missing schema: TSCG expects an object schema.
const emptySchema = `{"properties":{},"type":"object"}`

// compile runs the shim over ts and returns the encodings in input order.
// Tools are keyed by their call name ("server:tool"), so a listing must
// not hold the same tool twice.
func (a *TSCGArm) compile(ctx context.Context, ts []config.Tool) ([]string, error) {
	if err := a.Available(); err != nil {
		return nil, err
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	ids := make(map[string]bool, len(ts))
	for _, t := range ts {
		if err := checkTool(t); err != nil {
			return nil, err
		}
		id := callName(t)
		if ids[id] {
			return nil, fmt.Errorf("tscg: tool %q appears twice in the listing", id)
		}
		ids[id] = true
		schema, _, err := canonicalSchema(t)
		if err != nil {
			return nil, err
		}
		if schema == "" {
			schema = emptySchema
		}
		req := tscgRequest{ToolID: id, Tool: tscgTool{Name: id, Description: t.Description, InputSchema: json.RawMessage(schema)}}
		if err := enc.Encode(req); err != nil {
			return nil, fmt.Errorf("tscg: encoding request for %q: %w", callName(t), err)
		}
	}
	out, err := a.runner.Run(ctx, in.Bytes())
	if err != nil {
		return nil, fmt.Errorf("tscg: running the shim: %w", err)
	}
	return parseTSCGReplies(ts, out)
}

// parseTSCGReplies checks that the shim answered every tool exactly once
// and returns the encodings in input order. A per-tool error from the
// compiler becomes this call's error, naming the tool.
func parseTSCGReplies(ts []config.Tool, out []byte) ([]string, error) {
	got := make([]*string, len(ts))
	index := make(map[string]int, len(ts))
	for i, t := range ts {
		index[callName(t)] = i
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r tscgReply
		if err := strictDecode(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("tscg: shim output line %d: %w", line, err)
		}
		if r.ToolID == nil {
			if r.Error != nil {
				return nil, fmt.Errorf("tscg: shim output line %d: %s", line, *r.Error)
			}
			return nil, fmt.Errorf("tscg: shim output line %d has no tool_id", line)
		}
		i, known := index[*r.ToolID]
		if !known {
			return nil, fmt.Errorf("tscg: shim output line %d answers unknown tool_id %q", line, *r.ToolID)
		}
		name := callName(ts[i])
		switch {
		case got[i] != nil:
			return nil, fmt.Errorf("tscg: shim answered tool %q twice", name)
		case r.Error != nil && r.Encoded != nil:
			return nil, fmt.Errorf("tscg: shim output line %d has both encoded and error", line)
		case r.Error != nil:
			return nil, fmt.Errorf("tscg: compiling tool %q: %s", name, *r.Error)
		case r.Encoded == nil || *r.Encoded == "":
			return nil, fmt.Errorf("tscg: shim returned an empty encoding for tool %q", name)
		}
		got[i] = r.Encoded
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tscg: reading shim output: %w", err)
	}
	res := make([]string, len(ts))
	for i, s := range got {
		if s == nil {
			return nil, fmt.Errorf("tscg: shim gave no answer for tool %q", callName(ts[i]))
		}
		res[i] = *s
	}
	return res, nil
}
