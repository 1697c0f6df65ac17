package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// SDK names an official client library run by RunSDK.
type SDK string

// The SDKs: npm @anthropic-ai/sdk and openai, pinned in package.json.
const (
	Anthropic SDK = "anthropic"
	OpenAI    SDK = "openai"
)

// Call is one call made through an official SDK.
type Call struct {
	SDK     SDK               `json:"sdk"`
	BaseURL string            `json:"baseURL"`
	APIKey  string            `json:"apiKey,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Kind is "create" (one JSON answer), "stream" (the SDK's streaming
	// helper, whose final object is assembled from the events) or
	// "count_tokens" (Anthropic only).
	Kind string `json:"call"`
	Body any    `json:"body"`
	// AbortAfter, when positive, makes the SDK abort a stream after that
	// many events (a client hanging up mid-answer).
	AbortAfter int `json:"abortAfter,omitempty"`
}

// Outcome is what the SDK made of the answer.
type Outcome struct {
	OK bool `json:"ok"`
	// Result is the SDK's final object (a Message or ChatCompletion); for a
	// stream, assembled by the SDK from the events.
	Result json.RawMessage `json:"result"`
	// Events are a stream's events or chunks as the SDK parsed them.
	Events []json.RawMessage `json:"events"`
	// Aborted is set when AbortAfter cut the stream.
	Aborted bool `json:"aborted"`
	// On failure: the SDK's error class, HTTP status, error body and
	// message.
	Name    string          `json:"name"`
	Status  int             `json:"status"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

// RunSDK makes c through the official SDK in a Node process and returns
// what it reported. The SDK's retries are off.
func RunSDK(t testing.TB, c Call) Outcome {
	t.Helper()
	testenv.NodePackage(t, "@anthropic-ai/sdk", "")
	testenv.NodePackage(t, "openai", "")
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("gatewaytest: cannot locate sdk.mjs")
	}
	in, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("gatewaytest: encoding the call: %v", err)
	}
	out := testenv.NodeScript(t, filepath.Join(filepath.Dir(file), "sdk.mjs"), bytes.NewReader(in))
	var o Outcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("gatewaytest: reading the SDK's report %q: %v", out, err)
	}
	return o
}

// Do sends one request with the given headers and returns the answer, its
// body read whole. Any failure to send or read fails the test.
func Do(t testing.TB, ctx context.Context, method, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, b
}
