package largeargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

// randomString is a string with the characters a walker can trip on:
// quotes, backslashes, braces, brackets, control characters, non-ASCII.
func randomString(r *rand.Rand, n int) string {
	const alphabet = "ab \"\\{}[],:\n\t\x01é€😀/"
	runes := []rune(alphabet)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

// randomValue is a JSON value of bounded depth.
func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(7); {
	case depth <= 0 || k == 0:
		return randomString(r, r.IntN(40))
	case k == 1:
		return r.Float64() * 1e6
	case k == 2:
		return r.IntN(2) == 0
	case k == 3:
		return nil
	case k == 4:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth-1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(4) {
			m[randomString(r, 1+r.IntN(6))] = randomValue(r, depth-1)
		}
		return m
	}
}

// spaced re-encodes compact JSON with white space between its tokens.
func spaced(r *rand.Rand, compact []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, compact, strings.Repeat(" ", r.IntN(3)), "\t"); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// TestLiftableMatchesDecoding: over random tools/call bodies, what
// liftable takes out decodes to the arguments mcp-go decodes from the
// whole body, and the body left decodes to the same request with {} in
// their place.
func TestLiftableMatchesDecoding(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 1))
	for i := range 60 {
		args := map[string]any{"content": randomString(r, Min+r.IntN(4096))}
		for range r.IntN(4) {
			args[randomString(r, 1+r.IntN(5))] = randomValue(r, 3)
		}
		argsJSON, _ := json.Marshal(args)
		members := []string{
			`"jsonrpc":"2.0"`,
			fmt.Sprintf(`"id":%d`, i),
			`"method":"tools/call"`,
			fmt.Sprintf(`"params":{"name":"call_tool","arguments":%s,"_meta":{"progressToken":%d}}`, argsJSON, i),
		}
		if r.IntN(2) == 0 {
			extra, _ := json.Marshal(randomValue(r, 3))
			members = append(members, `"extra":`+string(extra))
		}
		r.Shuffle(len(members), func(a, b int) { members[a], members[b] = members[b], members[a] })
		body := []byte("{" + strings.Join(members, ",") + "}")
		if r.IntN(2) == 0 {
			body = spaced(r, body)
		}
		l, start, end := Liftable(body)
		if l == nil {
			t.Fatalf("body %d: not lifted", i)
		}
		var whole, rest mcp.CallToolRequest
		if err := json.Unmarshal(body, &whole); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(whole.Params.Arguments, any(l.args)) {
			diff := cmp.Diff(whole.Params.Arguments, any(l.args))
			t.Fatalf("body %d: lifted arguments differ from decoded (-want +got):\n%s", i, diff)
		}
		if !bytes.Equal(l.raw, whole.Params.RawArguments) {
			t.Fatalf("body %d: raw arguments differ", i)
		}
		left := append(append(append([]byte{}, body[:start]...), "{}"...), body[end:]...)
		if err := json.Unmarshal(left, &rest); err != nil {
			t.Fatalf("body %d: the body left does not decode: %v", i, err)
		}
		rest.Params.Arguments, rest.Params.RawArguments = whole.Params.Arguments, whole.Params.RawArguments
		if !reflect.DeepEqual(whole, rest) {
			diff := cmp.Diff(whole, rest)
			t.Fatalf("body %d: the body left decodes differently (-want +got):\n%s", i, diff)
		}
	}
}

// TestLiftableRefuses: what liftable leaves to mcp-go.
func TestLiftableRefuses(t *testing.T) {
	t.Parallel()
	big := `{"content":"` + strings.Repeat("x", Min) + `"}`
	for _, tc := range []struct{ name, body string }{
		{"small", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`},
		{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","argum\u0065nts":` + big + `}}`},
		{"repeated arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + big + `,"Arguments":{}}}`},
		{"repeated method", `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"tools/call","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0074","arguments":` + big + `}}`},
		{"arguments not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":["` + strings.Repeat("x", Min) + `"]}}`},
		{"arguments malformed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"content":"` + strings.Repeat("x", Min) + `",}}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + big + `}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, _, _ := Liftable([]byte(tc.body)); l != nil {
				t.Errorf("lifted %q, want it left to mcp-go", tc.name)
			}
		})
	}
}

// FuzzLiftable: whatever liftable lifts from any input, the body left is
// well-formed exactly when the input is (so mcp-go refuses what it always
// refused), and then the input decodes to the call and arguments lifted.
func FuzzLiftable(f *testing.F) {
	big := strings.Repeat("y", Min)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"c":"` + big + `"}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"arguments":{"c":"` + big + `\"}"},"name":"t"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, start, end := Liftable(data)
		if l == nil {
			return
		}
		left := append(append(append([]byte{}, data[:start]...), "{}"...), data[end:]...)
		if json.Valid(left) != json.Valid(data) {
			t.Fatalf("the body left is well-formed: %v, the input: %v", json.Valid(left), json.Valid(data))
		}
		var whole mcp.CallToolRequest
		if err := json.Unmarshal(data, &whole); err != nil {
			return // mcp-go refuses the body left as it would the input
		}
		if whole.Params.Name != l.name || !bytes.Equal(data[start:end], l.raw) {
			t.Fatalf("lifted %q %q, decoded %q", l.name, l.raw, whole.Params.Name)
		}
		if diff := cmp.Diff(whole.Params.Arguments, any(l.args)); diff != "" {
			t.Fatalf("(-decoded +lifted):\n%s", diff)
		}
	})
}
