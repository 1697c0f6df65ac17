package mcptransport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// TestCorrectAnswer: a CodedError's answer carries its code, message and
// data, and a roots/list input request gets params, whatever else the
// message holds.
func TestCorrectAnswer(t *testing.T) {
	t.Parallel()
	coded := func(e *CodedError) string {
		b, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)),
			Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, e.Error(), nil)})
		return string(b)
	}
	for _, tc := range []struct {
		name, in, want string
		code           int
	}{
		{
			name: "code and data",
			in:   coded(&CodedError{Code: -32021, Message: `needs "sampling"`, Data: map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}}),
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32021,"message":"needs \"sampling\"","data":{"requiredCapabilities":{"sampling":{}}}}}`,
			code: -32021,
		},
		{
			name: "code without data",
			in:   coded(&CodedError{Code: -32602, Message: "invalid requestState"}),
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"invalid requestState"}}`,
			code: -32602,
		},
		{
			name: "another internal error",
			in:   `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}}`,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"boom"}}`,
		},
		{
			name: "roots input request",
			in:   `{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list"}},"requestState":"s","resultType":"input_required"}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list","params":{}}},"requestState":"s","resultType":"input_required"}}`,
		},
		{
			name: "not an input_required result",
			in:   `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"method":"roots/list"}}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"method":"roots/list"}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, code := correctAnswer([]byte(tc.in))
			if string(got) != tc.want || code != tc.code {
				t.Errorf("got %s (code %d), want %s (code %d)", got, code, tc.want, tc.code)
			}
			if !json.Valid(got) {
				t.Errorf("got invalid JSON %s", got)
			}
		})
	}
}

// TestCorrectAnswersHTTP: a tool handler's CodedError reaches a
// 2026-07-28 client over streamable HTTP with its code and the HTTP
// status the revision gives it (mcp-go alone answers -32603 and 200).
func TestCorrectAnswersHTTP(t *testing.T) {
	t.Parallel()
	srv := mcpserver.NewMCPServer("coded", "1", mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("needs_sampling"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &CodedError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Message: "sampling capability required"}
	})
	ts := httptest.NewServer(correctAnswers(mcpserver.NewStreamableHTTPServer(srv)))
	t.Cleanup(ts.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"needs_sampling","arguments":{},"_meta":{"` +
		mcp.MetaKeyProtocolVersion + `":"` + mcp.LATEST_PROTOCOL_VERSION + `","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, "needs_sampling")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Error == nil || msg.Error.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY || msg.Error.Message != "sampling capability required" {
		t.Errorf("got %+v, want error -32021 \"sampling capability required\"", msg.Error)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("got HTTP %d, want 400", resp.StatusCode)
	}
}
