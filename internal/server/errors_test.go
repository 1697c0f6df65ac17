package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

func TestErrorTexts(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, got, want string
	}{
		{
			name: "unknown tool with matches",
			got:  unknownToolText("fs:raed_file", []string{"fs:read_file", "fs:read_text_file"}),
			want: `Unknown tool "fs:raed_file". Closest matches: fs:read_file, fs:read_text_file. Tool ids have the form "server:tool"; use retrieve_tools to find the right one and pass its id exactly.`,
		},
		{
			name: "unknown tool without matches",
			got:  unknownToolText("zzz", nil),
			want: `Unknown tool "zzz". Tool ids have the form "server:tool"; use retrieve_tools to find the right one and pass its id exactly.`,
		},
		{
			name: "down with retry",
			got:  downText(&upstream.DownError{Server: "git", State: upstream.StateDown, LastError: "process exited: exit status 1.", RetryAt: now.Add(4 * time.Second)}, now),
			want: `Server "git" is unavailable (state: down). Last error: process exited: exit status 1. mcproxy reconnects at 10:00:04 UTC (in 4s); retry the call after that. Tools of other servers still work.`,
		},
		{
			name: "connecting without retry time",
			got:  downText(&upstream.DownError{Server: "git", State: upstream.StateConnecting}, now),
			want: `Server "git" is unavailable (state: connecting). mcproxy is reconnecting; retry the call shortly. Tools of other servers still work.`,
		},
		{
			name: "disabled",
			got:  downText(&upstream.DownError{Server: "git", State: upstream.StateDisabled}, now),
			want: `Server "git" is unavailable (state: disabled). It is disabled in the mcproxy config; its tools cannot be called until it is enabled. Tools of other servers still work.`,
		},
		{
			name: "misconfigured",
			got: downText(&upstream.DownError{Server: "ctx7", State: upstream.StateMisconfigured,
				LastError: "mcpServers.ctx7.env.KEY: ${KEY} is not set: export KEY, or give a default with ${KEY:-value}"}, now),
			want: "Server \"ctx7\" is unavailable (state: misconfigured). Last error: mcpServers.ctx7.env.KEY: ${KEY} is not set: export KEY, or give a default with ${KEY:-value}. " +
				"Its entry in the mcproxy config has the problems above, so it was not started; retrying will not help until the user fixes them (mcproxy applies the saved file by itself). Tools of other servers still work.",
		},
		{
			name: "needs sign-in",
			got: downText(&upstream.DownError{Server: "linear", State: upstream.StateNeedsSignIn, RetryAt: now.Add(30 * time.Second),
				LastError: "upstream \"linear\" needs sign-in (no browser to open here): run `mcproxy auth login linear`"}, now),
			want: "Server \"linear\" is unavailable (state: needs sign-in). Last error: upstream \"linear\" needs sign-in (no browser to open here): run `mcproxy auth login linear`. " +
				"Retrying will not help until the user signs in: ask them to run the command above, then retry. Tools of other servers still work.",
		},
		{
			name: "timeout set for the server",
			got:  timeoutText(&upstream.TimeoutError{Server: "web", Tool: "crawl", Limit: 2 * time.Minute, Setting: "mcpServers.web.call_timeout"}),
			want: `Calling web:crawl timed out after 2m0s (the limit set by mcpServers.web.call_timeout). The tool may still be running upstream. If it needs longer, raise mcpServers.web.call_timeout in the mcproxy config; otherwise retry with a smaller request.`,
		},
		{
			name: "timeout set at the top level",
			got:  timeoutText(&upstream.TimeoutError{Server: "web", Tool: "crawl", Limit: time.Minute, Setting: "call_timeout"}),
			want: `Calling web:crawl timed out after 1m0s (the limit set by the top-level call_timeout). The tool may still be running upstream. If it needs longer, raise call_timeout, or set mcpServers.web.call_timeout for this server alone, in the mcproxy config; otherwise retry with a smaller request.`,
		},
		{
			name: "timeout by default",
			got:  timeoutText(&upstream.TimeoutError{Server: "web", Tool: "crawl", Limit: 2 * time.Minute, Setting: "the default call_timeout (set call_timeout or mcpServers.web.call_timeout to change it)"}),
			want: `Calling web:crawl timed out after 2m0s (the default call_timeout). The tool may still be running upstream. If it needs longer, set mcpServers.web.call_timeout (or the top-level call_timeout) in the mcproxy config; otherwise retry with a smaller request.`,
		},
		{
			name: "bad arguments with schema",
			got:  badArgumentsText("fs:read", `"arguments" is a number`, []byte("{\n  \"type\": \"object\"\n}")),
			want: `Bad arguments for fs:read: "arguments" is a number. Expected a JSON object matching this input schema: {"type":"object"}`,
		},
		{
			name: "rejected",
			got:  rejectedText("fs:read", errors.New("invalid params: path is required"), nil, map[string]any{"pth": "a"}),
			want: `fs:read rejected the call as invalid (invalid params: path is required). Check the arguments. Expected a JSON object of the tool's parameters; use describe_tool to see them.`,
		},
		{
			name: "rejected, arguments checked against the schema",
			got:  rejectedText("fs:read", errors.New("invalid params"), []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`), map[string]any{"pth": "a"}),
			want: `fs:read rejected the call as invalid (invalid params). The arguments do not fit: "path" is required and missing; "pth" is not one of its parameters; its parameters are path (required). Expected a JSON object matching this input schema: {"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		},
		{
			name: "mismatch after an upstream error, retrieve mode",
			got:  mismatchText("fs:read", `"path" is required and missing`),
			want: `mcproxy: the arguments do not fit fs:read: "path" is required and missing. Call it again with corrected arguments; describe_tool shows the full schema.`,
		},
		{
			name: "mismatch after an upstream error, direct mode",
			got:  mismatchText("", `"path" is required and missing`),
			want: `mcproxy: the arguments do not fit this tool: "path" is required and missing. Call it again with corrected arguments.`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	ids := []string{"fs:read_file", "fs:read_text_file", "fs:write_file", "git:status", "mem:read_graph", "web:fetch"}
	tests := []struct {
		want string
		got  []string
	}{
		{"fs:raed_file", []string{"fs:read_file", "fs:write_file"}},
		{"read_file", []string{"fs:read_file", "fs:write_file", "fs:read_text_file"}},
		{"github:status", []string{"git:status"}},
		{"completely:unrelated", nil},
	}
	for _, tc := range tests {
		got := suggest(tc.want, ids, 3)
		if diff := cmp.Diff(tc.got, got, cmp.Comparer(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal([]string(a), []string(b)) })); diff != "" {
			t.Errorf("suggest(%q) (-want +got):\n%s", tc.want, diff)
		}
	}
}

func TestSignature(t *testing.T) {
	tests := []struct {
		schema, want string
	}{
		{`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}},"required":["path"]}`, "path: string, head?: number"},
		{`{"type":"object","properties":{"mode":{"type":"string","enum":["r","w"]},"tags":{"type":"array","items":{"type":"string"}}},"required":["mode"]}`, "mode: r|w, tags?: string[]"},
		{`{"type":"object","properties":{"x":{"type":["string","null"]},"y":{"anyOf":[{"type":"integer"},{"type":"null"}]},"z":{}}}`, "x?: string, y?: integer, z?: any"},
		{`{"type":"object"}`, ""},
		{``, ""},
		{`not json`, "..."},
	}
	for _, tc := range tests {
		if got := Signature(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("Signature(%s): got %q, want %q", tc.schema, got, tc.want)
		}
	}
}

func TestInterimRenderer(t *testing.T) {
	matches := []Match{
		{Tool: toolFor("fs", "read_text_file", "Read the complete contents of a file as text. Handles encodings.\nMore.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`), Score: 4.2071},
		{Tool: toolFor("mem", "read_graph", "", `{"type":"object","properties":{}}`), Score: 1},
	}
	got, err := InterimRenderer(matches)
	if err != nil {
		t.Fatal(err)
	}
	want := "fs:read_text_file(path: string) 4.21 Read the complete contents of a file as text.\nmem:read_graph() 1.00"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	again, _ := InterimRenderer(matches)
	if again != got {
		t.Error("InterimRenderer is not deterministic")
	}
}

func toolFor(server, name, desc, schema string) config.Tool {
	return config.Tool{ID: config.ToolID(server, name), Server: server, Name: name, Description: desc, Schema: json.RawMessage(schema)}
}

func TestArgumentProblems(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"},"tail":{"type":"number"}},"required":["path"]}`)
	many := map[string]any{}
	for i := range 15 {
		many[fmt.Sprintf("p%02d", i)] = map[string]any{"type": "string"}
	}
	manySchema, err := json.Marshal(map[string]any{"type": "object", "properties": many, "required": []string{"p00"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema []byte
		args   map[string]any
		want   string
	}{
		{"fits", schema, map[string]any{"path": "a", "head": 3}, ""},
		{"misspelled", schema, map[string]any{"pth": "a"}, `"path" is required and missing; "pth" is not one of its parameters; its parameters are head, path (required), tail`},
		{"extra only", schema, map[string]any{"path": "a", "lines": 3, "all": true}, `"all" is not one of its parameters; "lines" is not one of its parameters; its parameters are head, path (required), tail`},
		{"no properties listed: only required is checked", []byte(`{"type":"object","required":["q"]}`), map[string]any{"x": 1}, `"q" is required and missing`},
		{"open schema, nothing wrong", []byte(`{"type":"object"}`), map[string]any{"x": 1}, ""},
		{"no schema", nil, map[string]any{"x": 1}, ""},
		{"not JSON", []byte(`{`), map[string]any{"x": 1}, ""},
		{"long parameter list is cut", manySchema, map[string]any{}, `"p00" is required and missing; its parameters are p00 (required), p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, ...`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := argumentProblems(tc.schema, tc.args); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
