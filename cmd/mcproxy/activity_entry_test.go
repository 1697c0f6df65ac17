package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/server"
)

// An entry's arguments are the client's JSON text of them when the front
// has it (issue 28), an excerpt of it when it is large; the map is encoded
// only when the text is unknown.
func TestActivityEntryArguments(t *testing.T) {
	t.Parallel()
	const sent = `{"path":"/tmp/a <b>.txt","content":"x"}`
	args := map[string]any{"path": "/tmp/a <b>.txt", "content": "x"}
	if got := activityEntry(server.Call{Arguments: args, ArgumentsJSON: json.RawMessage(sent)}).Arguments; got != sent {
		t.Errorf("with the client's text: got %q, want %q", got, sent)
	}
	if got, want := activityEntry(server.Call{Arguments: args}).Arguments, `{"content":"x","path":"/tmp/a \u003cb\u003e.txt"}`; got != want {
		t.Errorf("without it: got %q, want the map encoded %q", got, want)
	}
	huge := `{"content":"` + strings.Repeat("x", 5<<20) + `"}`
	if got := activityEntry(server.Call{Arguments: map[string]any{"content": "…"}, ArgumentsJSON: json.RawMessage(huge)}).Arguments; len(got) >= len(huge)/8 || !strings.HasPrefix(got, `{"content":"xxx`) {
		t.Errorf("a 5 MB argument: got %d bytes starting %.20q, want an excerpt of the client's text", len(got), got)
	}
	if got := activityEntry(server.Call{}).Arguments; got != "" {
		t.Errorf("no arguments: got %q, want none", got)
	}
}
