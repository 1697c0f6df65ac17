package arms

import (
	"encoding/json"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"sorted keys at every depth", `{"b":{"z":1,"a":[{"y":2,"x":1}]},"a":0}`, `{"a":0,"b":{"a":[{"x":1,"y":2}],"z":1}}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"whitespace removed", "{ \"a\" :\n\t[ 1 , 2 ] }\n", `{"a":[1,2]}`},
		{"huge exponent verbatim", `{"n":1e400}`, `{"n":1e400}`},
		{"trailing zero verbatim", `{"n":1.0}`, `{"n":1.0}`},
		{"negative zero and fractions verbatim", `[-0,0.10,1E-7,12345678901234567890123]`, `[-0,0.10,1E-7,12345678901234567890123]`},
		{"no HTML escaping", `{"s":"<a href=\"x\">&amp;</a>"}`, `{"s":"<a href=\"x\">&amp;</a>"}`},
		{"escaped HTML in input comes out literal", `{"s":"\u003cb\u003e \u0026"}`, `{"s":"<b> &"}`},
		{"unicode kept", `{"s":"日本 ✓"}`, `{"s":"日本 ✓"}`},
		{"control characters escaped", `{"s":"a\nb\u0001"}`, `{"s":"a\nb\u0001"}`},
		{"keys sorted bytewise", `{"b":1,"B":2,"a":3,"_":4}`, `{"B":2,"_":4,"a":3,"b":1}`},
		{"scalars", `"x"`, `"x"`},
		{"null", `null`, `null`},
		{"duplicate key keeps last", `{"a":1,"a":2}`, `{"a":2}`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalJSON(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("CanonicalJSON(%s): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("CanonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			again, err := CanonicalJSON(json.RawMessage(got))
			if err != nil || again != got {
				t.Errorf("CanonicalJSON is not idempotent: got %s (%v), want %s", again, err, got)
			}
		})
	}
}

func TestCanonicalJSONRejectsInvalid(t *testing.T) {
	for _, in := range []string{``, `   `, `{`, `{"a":}`, `{"a":1}{"b":2}`, `[1,2]x`, `{'a':1}`, `NaN`, `01`} {
		if got, err := CanonicalJSON(json.RawMessage(in)); err == nil {
			t.Errorf("CanonicalJSON(%q) = %q, want an error", in, got)
		}
	}
}

func TestCanonicalToolText(t *testing.T) {
	tests := []struct {
		name string
		tool config.Tool
		want string
	}{
		{"with schema", config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "Does <x>.", Schema: json.RawMessage(`{"type":"object", "properties":{}}`)},
			"s:t\nDoes <x>.\n{\"properties\":{},\"type\":\"object\"}"},
		{"without schema", config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "d"}, "s:t\nd"},
		{"null schema is none", config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "d", Schema: json.RawMessage(`null`)}, "s:t\nd"},
		{"id built from server and name", config.Tool{Server: "s", Name: "t", Description: "d"}, "s:t\nd"},
		{"bare name", config.Tool{Name: "t", Description: "d"}, "t\nd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalToolText(tc.tool)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUnencodableTools checks that every arm refuses, with an error, tools
// it cannot render: no silent fallback.
func TestUnencodableTools(t *testing.T) {
	bad := []struct {
		name string
		tool config.Tool
	}{
		{"no name", config.Tool{ID: "s:", Server: "s", Description: "d"}},
		{"invalid schema JSON", config.Tool{ID: "s:t", Server: "s", Name: "t", Schema: json.RawMessage(`{"type":`)}},
		{"schema not an object", config.Tool{ID: "s:t", Server: "s", Name: "t", Schema: json.RawMessage(`["a"]`)}},
	}
	for _, a := range append(pureArms(), NewTSCG(&recordingRunner{})) {
		for _, tc := range bad {
			if got, err := a.EncodeTool(tc.tool); err == nil {
				t.Errorf("%s.EncodeTool(%s) = %q, want an error", a.Name(), tc.name, got)
			}
			if got, err := a.EncodeIndexMetadata(tc.tool); err == nil {
				t.Errorf("%s.EncodeIndexMetadata(%s) = %+v, want an error", a.Name(), tc.name, got)
			}
			good := config.Tool{ID: "s:ok", Server: "s", Name: "ok"}
			if got, err := a.EncodeListing([]config.Tool{good, tc.tool}); err == nil {
				t.Errorf("%s.EncodeListing(with %s) = %q, want an error", a.Name(), tc.name, got)
			}
		}
	}
}
