package mcptransport

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC batches: protocol versions up to 2025-03-26 let a client send
// several messages as one JSON array, and a receiver must take them; mcp-go
// takes one message at a time. The front splits a batch into its messages,
// hands each to mcp-go as if it had come alone, and answers with the array
// of their responses (in any order, as JSON-RPC allows). A batch of
// notifications and responses only gets no answer (202 over HTTP).
//
// This file holds what both transports need to read a batch; batch_stdio.go
// and batch_http.go each split and answer batches on one transport. Every
// goroutine they start recovers a panic into an Internal error (-32603)
// for the element it was serving, and logs it: one bad element never takes
// the process, or the rest of its batch, down.

// batchError is a JSON-RPC error response with a null id, for a batch or a
// batch element that cannot be read as a message.
func batchError(code int, message string) json.RawMessage {
	return rpcError(nil, code, message)
}

// rpcError is a JSON-RPC error response to the request with id (nil: null).
func rpcError(id json.RawMessage, code int, message string) json.RawMessage {
	var idv any = id
	if !hasID(id) {
		idv = nil
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      idv,
		"error":   map[string]any{"code": code, "message": message},
	})
	return b
}

// batchElement is what the front needs to know of one message.
type batchElement struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// cancels returns the id of the request a notifications/cancelled message
// cancels, or nil.
func (e batchElement) cancels() json.RawMessage {
	if e.Method != "notifications/cancelled" {
		return nil
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return nil
	}
	return p.RequestID
}

// isRequest: a request has a method and an id; a response to it is owed.
func (e batchElement) isRequest() bool { return e.Method != "" && hasID(e.ID) }

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// idKey is a canonical form of a JSON-RPC id (1, 1.0 and "1" differ as
// JSON-RPC ids, but 1 and 1.0 do not).
func idKey(id json.RawMessage) string {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return string(id)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parseBatch reads a batch: its elements, or the error response for a
// batch that is not a JSON array of at least one element.
func parseBatch(data []byte) ([]json.RawMessage, json.RawMessage) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, batchError(mcp.PARSE_ERROR, fmt.Sprintf("the batch is not a valid JSON array: %v", err))
	}
	if len(elems) == 0 {
		return nil, batchError(mcp.INVALID_REQUEST, "empty batch: send at least one message")
	}
	return elems, nil
}

// readElement decodes one batch element; ok is false for anything that is
// not a JSON object (answered with an Invalid Request error).
func readElement(raw json.RawMessage) (batchElement, bool) {
	var e batchElement
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &e) != nil {
		return e, false
	}
	return e, true
}

// internalErrorText is the message of the Internal error a batch element
// whose handling panicked is answered with.
func internalErrorText(method string) string {
	return fmt.Sprintf("internal error while handling %q in a batch (a bug in mcproxy; the log has details): retry, or send the message on its own", method)
}

const invalidElement = "invalid request: each element of a batch must be a JSON-RPC message object"
