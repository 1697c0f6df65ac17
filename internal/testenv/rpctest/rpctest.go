// Package rpctest posts JSON-RPC messages to an MCP streamable HTTP endpoint
// and reads the answers of batches, for the tests of the HTTP transports and
// of the MCP front behind them. It is imported only by _test.go files.
package rpctest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// RPC is the part of a JSON-RPC response the batch tests look at.
type RPC struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ByID indexes a batch answer by id (compact JSON: 2, "x"); responses with
// a null id (errors for elements that were not messages) come apart.
func ByID(t testing.TB, data string) (map[string]RPC, []RPC) {
	t.Helper()
	var all []RPC
	if err := json.Unmarshal([]byte(data), &all); err != nil {
		t.Fatalf("batch answer %q is not a JSON array of responses: %v", data, err)
	}
	out := map[string]RPC{}
	var nulls []RPC
	for _, r := range all {
		key := string(r.ID)
		if key == "null" {
			nulls = append(nulls, r)
			continue
		}
		if _, dup := out[key]; dup {
			t.Errorf("batch answer %s: two responses with id %s", data, key)
		}
		out[key] = r
	}
	return out, nulls
}

// PostMCP posts body to a streamable HTTP endpoint (in session, when not
// empty) and returns the answer's status, body and headers.
func PostMCP(t testing.TB, url, session, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// Answer is the JSON-RPC response in a streamable HTTP answer's body: the
// body itself when it is plain JSON, or, when the server streamed it (SSE,
// with notifications such as tools/list_changed before the answer), the
// data of the event that is a response (an id, no method). A body that
// holds no response comes back as it is.
func Answer(body string) string {
	trimmed := strings.TrimSpace(body)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		return body
	}
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		data = strings.TrimSpace(data)
		if json.Unmarshal([]byte(data), &m) == nil && len(m.ID) > 0 && m.Method == "" {
			return data
		}
	}
	return body
}
