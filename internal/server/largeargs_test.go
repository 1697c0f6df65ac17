package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
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
	r := rand.New(rand.NewPCG(13, 1))
	for i := range 60 {
		args := map[string]any{"content": randomString(r, liftMin+r.IntN(4096))}
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
		l, start, end := liftable(body)
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
	big := `{"content":"` + strings.Repeat("x", liftMin) + `"}`
	for _, tc := range []struct{ name, body string }{
		{"small", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`},
		{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","argum\u0065nts":` + big + `}}`},
		{"repeated arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + big + `,"Arguments":{}}}`},
		{"repeated method", `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"tools/call","params":{"name":"t","arguments":` + big + `}}`},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0074","arguments":` + big + `}}`},
		{"arguments not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":["` + strings.Repeat("x", liftMin) + `"]}}`},
		{"arguments malformed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"content":"` + strings.Repeat("x", liftMin) + `",}}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + big + `}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, _, _ := liftable([]byte(tc.body)); l != nil {
				t.Errorf("lifted %q, want it left to mcp-go", tc.name)
			}
		})
	}
}

// oldBadID is badID as it was: one decode of the whole body.
func oldBadID(data []byte) json.RawMessage {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(t, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '{', '[', 't', 'f':
		return batchError(mcp.INVALID_REQUEST, "invalid request: \"id\" must be a string, a number or null")
	}
	return nil
}

// FuzzBadID: badID, which walks the body, answers as the decoding it
// replaced did, for any input.
func FuzzBadID(f *testing.F) {
	for _, s := range []string{
		`{"id":1}`, `{"id":true}`, `{"ID":{}}`, `{"id":[1],"id":2}`, `{"id":2,"Id":[]}`, `{"id":{}} x`,
		`{"i\u0064":true}`, `{"id":tru}`, `{"a":"\"id\":true","id":null}`, `{"id":"x\\"}`, ` {"id" : false } `,
		`{"id":[1,{"a":"]"}]}`, `{"id":true,}`, `{"id":true`, `[{"id":true}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := badID(data), oldBadID(data); !bytes.Equal(got, want) {
			t.Errorf("badID(%q) = %s, want %s", data, got, want)
		}
	})
}

// FuzzLiftable: whatever liftable lifts from any input, the body left is
// well-formed exactly when the input is (so mcp-go refuses what it always
// refused), and then the input decodes to the call and arguments lifted.
func FuzzLiftable(f *testing.F) {
	big := strings.Repeat("y", liftMin)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"c":"` + big + `"}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"arguments":{"c":"` + big + `\"}"},"name":"t"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, start, end := liftable(data)
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

// TestLargeArgumentsReachTheUpstream: a call whose arguments are lifted out
// of the body (largeargs.go) reaches the upstream with every byte, through
// call_tool and through a direct-mode tool, over streamable HTTP.
func TestLargeArgumentsReachTheUpstream(t *testing.T) {
	msg := strings.Repeat("a \"quoted\" line with \\ and é, </tag> & more\n", 4*liftMin/40)
	for _, tc := range []struct {
		name, tool string
		mode       string
		args       map[string]any
	}{
		{"call_tool", ToolCall, "", map[string]any{"name": "test:echo", "arguments": map[string]any{"message": msg}}},
		{"direct", "test__echo", config.ModeDirect, map[string]any{"message": msg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
			f := startFront(t, up, newWordIndex(), Options{Mode: tc.mode}, HTTPOptions{})
			c := connect(t, f, "streamable", nil)
			res := callTool(t, c, tc.tool, tc.args)
			if got := text(res); res.IsError || got != "Echo: "+msg {
				t.Errorf("got %.80q (isError %v, %d bytes), want the %d-byte message echoed", got, res.IsError, len(got), len(msg))
			}
		})
	}
}

// TestLargeArgumentRecordedWhileCallRuns: a call with a large argument
// runs while the argument is recorded (noaFront.call's overlap), yet the
// session holds the call, cut, before its result, and a panic in the call
// still reaches the caller.
func TestLargeArgumentRecordedWhileCallRuns(t *testing.T) {
	h := openTestHost(t, hostOptions(t), "s")
	nf := &noaFront{log: zap.NewNop()}
	args, _ := json.Marshal(map[string]any{"path": "/a", "content": strings.Repeat("a line of a large file written at once\n", overlapArgs/30)})
	got, err := nf.call(context.Background(), h, "fs:write_file", string(args), true, func(context.Context) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Successfully wrote to /a"), nil
	})
	if err != nil || len(got.Content) == 0 || got.Content[0].(mcp.TextContent).Text != "Successfully wrote to /a" {
		t.Fatalf("got %v, %v; want the call's result", got, err)
	}
	msgs := h.Messages()
	if len(msgs) != 2 || msgs[0].ContentType != noa.CTToolCall || msgs[1].ContentType != noa.CTToolResult || msgs[1].ToolCallID != msgs[0].ToolCallID {
		t.Fatalf("got messages %+v, want the call and then its result", msgs)
	}
	if !strings.Contains(msgs[0].Text, noa.TruncationMarker) {
		t.Errorf("the recorded call holds %d bytes without a cut, want it cut", len(msgs[0].Text))
	}

	defer func() {
		if p := recover(); p != "upstream exploded" {
			t.Errorf("recovered %v, want the call's panic", p)
		}
	}()
	_, _ = nf.call(context.Background(), h, "fs:write_file", string(args), true, func(context.Context) (*mcp.CallToolResult, error) {
		panic("upstream exploded")
	})
	t.Error("the call's panic did not reach the caller")
}

// TestStdioLiftsLargeArguments: over stdio, a tools/call with large
// arguments is lifted out of its line before mcp-go reads it and put back
// before the call runs (largeargs.go): the upstream gets every byte, under
// an id written either way (7.0 is 7), and a lifted request mcp-go answers
// without running it leaves nothing behind.
func TestStdioLiftsLargeArguments(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	msg := strings.Repeat("a \"quoted\" line with \\ and é, </tag> & more\n", 4*liftMin/40)
	enc, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	call := func(jsonrpc, id string) string {
		c.send(`{"jsonrpc":"` + jsonrpc + `","id":` + id + `,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":` + string(enc) + `}}}}`)
		return c.next()
	}
	var resp struct {
		ID     json.RawMessage          `json:"id"`
		Result mcp.CallToolResult       `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal([]byte(call("2.0", "7.0")), &resp); err != nil {
		t.Fatal(err)
	}
	if got := text(&resp.Result); resp.Error != nil || resp.Result.IsError || got != "Echo: "+msg {
		t.Errorf("the large call: got %.80q (%d bytes, error %v), want the %d-byte message echoed", got, len(got), resp.Error, len(msg))
	}
	if n := s.lifts.restored.Load(); n != 1 {
		t.Errorf("%d calls got lifted arguments back, want 1: the large call's line went to mcp-go whole", n)
	}
	// mcp-go refuses a request of another JSON-RPC version before any
	// hook runs; its lifted arguments go with the answer.
	resp.Error = nil
	if err := json.Unmarshal([]byte(call("1.0", `"old"`)), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || string(resp.ID) != `"old"` {
		t.Errorf("the JSON-RPC 1.0 call: got id %s error %v, want it refused", resp.ID, resp.Error)
	}
	if !s.lifts.empty() {
		t.Error("the refused call's lifted arguments are still kept after its answer")
	}
	c.close()
}

// TestLiftTableAnswered: an error response to a request whose lifted
// arguments wait drops them (mcp-go refused it unrun); a result for the
// same id (another request reusing it) does not take them from the call.
func TestLiftTableAnswered(t *testing.T) {
	t.Parallel()
	var lifts liftTable
	if !lifts.put(idKey(json.RawMessage(`5`)), &lifted{name: "t"}) {
		t.Fatal("put into an empty table refused")
	}
	if lifts.put(idKey(json.RawMessage(`5.0`)), &lifted{name: "t"}) {
		t.Error("a second entry for id 5.0 was kept beside the one for 5")
	}
	lifts.answered([]byte(`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"))
	if lifts.empty() {
		t.Error("a result for id 5 dropped the arguments waiting for the call with that id")
	}
	lifts.answered([]byte(`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"no"}}` + "\n"))
	if !lifts.empty() {
		t.Error("an error response for id 5 left its lifted arguments kept")
	}
}
