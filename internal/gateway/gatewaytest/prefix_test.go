package gatewaytest

import (
	"strings"
	"testing"
)

func TestPrefixStable(t *testing.T) {
	const (
		tools  = `"tools":[{"name":"read_file","input_schema":{"type":"object"}}]`
		system = `"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]`
		first  = `{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"[m00001 · 1 tok]"}]}`
		answer = `{"role":"assistant","content":[{"type":"text","text":"hello"}]}`
		marked = `{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}`
		plain  = `{"role":"user","content":[{"type":"text","text":"more"}]}`
		nudged = `{"role":"user","content":[{"type":"text","text":"more"},{"type":"text","text":"` + NudgeMarker + ` 80% of the window."}]}`
	)
	body := func(msgs ...string) string {
		return `{"model":"m",` + tools + `,` + system + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	for _, tc := range []struct {
		name       string
		prev, next string
		openai     bool
		want       bool
	}{
		{"extended, breakpoint moved", body(first, answer, marked), body(first, answer, plain, answer, marked), false, true},
		{"no breakpoint in messages: the system one counts", body(first, answer, plain), body(`{"role":"user","content":"changed"}`), false, true},
		{"edited before the breakpoint", body(first, answer, marked), body(`{"role":"user","content":"hi"}`, answer, marked), false, false},
		{"a string is one text block", body(`{"role":"user","content":"hi"}`, answer, marked), body(`{"role":"user","content":[{"type":"text","text":"hi"}]}`, answer, plain), false, true},
		{"the nudge is not in the prefix", `{"messages":[` + first + `,` + answer + `,` + nudged + `]}`, `{"messages":[` + first + `,` + answer + `,` + plain + `,` + answer + `]}`, false, true},
		{"without breakpoints every client message counts", `{"messages":[` + first + `,` + answer + `,` + plain + `]}`, `{"messages":[` + first + `,` + answer + `]}`, false, false},
		{"openai: a nudge message is left out", `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"` + NudgeMarker + ` 80%"}]}`, `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, true, true},
		{"openai: a changed message", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"c"}]}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePrefix([]byte(tc.prev), tc.openai)
			if err != nil {
				t.Fatal(err)
			}
			n, err := ParsePrefix([]byte(tc.next), tc.openai)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Stable(n); got != tc.want {
				t.Errorf("Stable: got %v, want %v (reused %d units of %d)", got, tc.want, p.Reused(), p.Units())
			}
		})
	}
}
