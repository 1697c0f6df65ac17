package mcptransport

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcproxy/mcproxy/internal/largeargs"
)

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

// TestLiftTableAnswered: an error response to a request whose lifted
// arguments wait drops them (mcp-go refused it unrun); a result for the
// same id (another request reusing it) does not take them from the call.
func TestLiftTableAnswered(t *testing.T) {
	t.Parallel()
	var lifts largeargs.Table
	if !lifts.Put(idKey(json.RawMessage(`5`)), &largeargs.Lifted{}) {
		t.Fatal("put into an empty table refused")
	}
	if lifts.Put(idKey(json.RawMessage(`5.0`)), &largeargs.Lifted{}) {
		t.Error("a second entry for id 5.0 was kept beside the one for 5")
	}
	answered(&lifts, []byte(`{"jsonrpc":"2.0","id":5,"result":{}}`+"\n"))
	if lifts.Empty() {
		t.Error("a result for id 5 dropped the arguments waiting for the call with that id")
	}
	answered(&lifts, []byte(`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"no"}}`+"\n"))
	if !lifts.Empty() {
		t.Error("an error response for id 5 left its lifted arguments kept")
	}
}
