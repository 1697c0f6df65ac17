package arms

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestGolden pins every pure arm's per-tool, listing and index output on
// corpus_v2. Review changes to testdata/ in the diff; regenerate with
// go test ./internal/arms -update.
func TestGolden(t *testing.T) {
	tools := loadCorpus(t)
	for _, a := range pureArms() {
		t.Run(a.Name(), func(t *testing.T) {
			got, err := perTool(tools, a.EncodeTool)
			if err != nil {
				t.Fatalf("EncodeTool: %v", err)
			}
			golden(t, a.Name()+".tools.golden", got)

			listing, err := a.EncodeListing(tools)
			if err != nil {
				t.Fatalf("EncodeListing: %v", err)
			}
			golden(t, a.Name()+".listing.golden", listing+"\n")

			var b strings.Builder
			for _, tool := range tools {
				md, err := a.EncodeIndexMetadata(tool)
				if err != nil {
					t.Fatalf("EncodeIndexMetadata(%s): %v", tool.ID, err)
				}
				line, err := json.Marshal(md)
				if err != nil {
					t.Fatal(err)
				}
				b.Write(line)
				b.WriteByte('\n')
			}
			golden(t, a.Name()+".index.golden", b.String())
		})
	}
}

// TestGoldenTSCGRequests pins the JSONL the tscg arm sends to its shim for
// corpus_v2: the half of the TSCG protocol this repository owns. (The
// compiled text itself depends on @tscg/core, which is not installed here.)
func TestGoldenTSCGRequests(t *testing.T) {
	tools := loadCorpus(t)
	rec := &recordingRunner{}
	a := NewTSCG(rec)
	if _, err := a.EncodeListing(tools); err != nil {
		t.Fatalf("EncodeListing: %v", err)
	}
	golden(t, "tscg.requests.golden", string(rec.input))
}

// recordingRunner keeps the input it is given and answers each line with a
// fixed encoding derived from its tool_id.
type recordingRunner struct{ input []byte }

func (*recordingRunner) Available() error { return nil }

func (r *recordingRunner) Run(_ context.Context, input []byte) ([]byte, error) {
	r.input = append([]byte(nil), input...)
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(input), "\n"), "\n") {
		var req tscgRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			return nil, err
		}
		reply, _ := json.Marshal(map[string]string{"tool_id": req.ToolID, "encoded": req.Tool.Name + ": compiled"})
		out.Write(reply)
		out.WriteByte('\n')
	}
	return []byte(out.String()), nil
}
