package arms

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// scriptedRunner answers with fixed output. It stands in for the shim only
// to produce broken protocol output the real shim never writes; the real
// shim is run in package armsio's tests.
type scriptedRunner struct {
	out string
	err error
}

func (*scriptedRunner) Available() error { return nil }

func (s *scriptedRunner) Run(context.Context, []byte) ([]byte, error) { return []byte(s.out), s.err }

func TestTSCGProtocolErrors(t *testing.T) {
	tools := []config.Tool{{ID: "s:a", Server: "s", Name: "a"}, {ID: "s:b", Server: "s", Name: "b"}}
	tests := []struct {
		name, out string
		err       error
		wantErr   string
	}{
		{"missing answer", `{"tool_id":"s:a","encoded":"s:a: x"}` + "\n", nil, `no answer for tool "s:b"`},
		{"answered twice", `{"tool_id":"s:a","encoded":"x"}` + "\n" + `{"tool_id":"s:a","encoded":"x"}` + "\n", nil, `answered tool "s:a" twice`},
		{"unknown id", `{"tool_id":"s:z","encoded":"x"}` + "\n", nil, `unknown tool_id "s:z"`},
		{"compiler error", `{"tool_id":"s:a","encoded":"x"}` + "\n" + `{"tool_id":"s:b","error":"bad schema"}` + "\n", nil, `compiling tool "s:b": bad schema`},
		{"load failure", `{"tool_id":null,"error":"loading @tscg/core: not found"}` + "\n", nil, `loading @tscg/core: not found`},
		{"not JSON", "hello\n", nil, "shim output line 1"},
		{"unknown field", `{"tool_id":"s:a","encoded":"x","extra":1}` + "\n", nil, `unknown field "extra"`},
		{"both fields", `{"tool_id":"s:a","encoded":"x","error":"y"}` + "\n", nil, "both encoded and error"},
		{"empty encoding", `{"tool_id":"s:a","encoded":""}` + "\n", nil, `empty encoding for tool "s:a"`},
		{"runner failure", "", errors.New("exit status 1"), "running the shim: exit status 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTSCG(&scriptedRunner{out: tc.out, err: tc.err}).EncodeListing(tools)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestTSCGListingOrderAndDuplicates(t *testing.T) {
	tools := []config.Tool{{ID: "s:a", Server: "s", Name: "a"}, {ID: "s:b", Server: "s", Name: "b"}}
	// Answers out of order still land in input order.
	out := `{"tool_id":"s:b","encoded":"s:b: B"}` + "\n\n" + `{"tool_id":"s:a","encoded":"s:a: A"}` + "\n"
	got, err := NewTSCG(&scriptedRunner{out: out}).EncodeListing(tools)
	if err != nil || got != "s:a: A"+ListingSeparator+"s:b: B" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := NewTSCG(&scriptedRunner{out: out}).EncodeListing([]config.Tool{tools[0], tools[0]}); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate tool: got %v, want an 'appears twice' error", err)
	}
	if got, err := NewTSCG(&scriptedRunner{}).EncodeListing(nil); err != nil || got != "" {
		t.Errorf("empty listing: got %q, %v", got, err)
	}
}

func TestTSCGRequestShape(t *testing.T) {
	rec := &recordingRunner{}
	tool := config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "D <b>", Schema: json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}`)}
	bare := config.Tool{ID: "s:u", Server: "s", Name: "u"}
	if _, err := NewTSCG(rec).EncodeListing([]config.Tool{tool, bare}); err != nil {
		t.Fatal(err)
	}
	want := `{"tool_id":"s:t","tool":{"name":"s:t","description":"D <b>","input_schema":{"properties":{"a":{"type":"number"},"b":{"type":"string"}},"type":"object"}}}` + "\n" +
		`{"tool_id":"s:u","tool":{"name":"s:u","description":"","input_schema":{"properties":{},"type":"object"}}}` + "\n"
	if diff := cmp.Diff(want, string(rec.input)); diff != "" {
		t.Errorf("shim input (-want +got):\n%s", diff)
	}
}

func TestSplitTSCG(t *testing.T) {
	tests := []struct {
		name, enc, desc, params string
	}{
		{"params and closure", "s:t: Reads a file\n  path* (str): where | head (num): lines\n[CLOSURE:s:t(path)]", "Reads a file", "  path* (str): where | head (num): lines\n[CLOSURE:s:t(path)]"},
		{"multi-line description", "s:t: Line one\nline two\n  a* (str): x\n[CLOSURE:s:t(a)]", "Line one\nline two", "  a* (str): x\n[CLOSURE:s:t(a)]"},
		{"closure only", "s:t: Lists things\n[CLOSURE:s:t()]", "Lists things", "[CLOSURE:s:t()]"},
		{"description only", "s:t: Just words", "Just words", ""},
		{"several param lines", "s:t: D\n  a (str): x\n  b (num): y\n[CLOSURE:s:t()]", "D", "  a (str): x\n  b (num): y\n[CLOSURE:s:t()]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desc, params, err := splitTSCG("s:t", tc.enc)
			if err != nil {
				t.Fatal(err)
			}
			if desc != tc.desc || params != tc.params {
				t.Errorf("got (%q, %q), want (%q, %q)", desc, params, tc.desc, tc.params)
			}
			rebuilt := "s:t: " + desc
			if params != "" {
				rebuilt += "\n" + params
			}
			if rebuilt != tc.enc {
				t.Errorf("the parts do not rebuild the encoding: got %q, want %q", rebuilt, tc.enc)
			}
		})
	}
	if _, _, err := splitTSCG("s:t", "other: D"); err == nil {
		t.Error("splitTSCG accepted output that does not start with the tool name")
	}
}
