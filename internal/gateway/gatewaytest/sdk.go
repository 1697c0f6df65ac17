package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
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
// what it reported. The SDK's retries are off. Node must be on PATH and the
// repository's node_modules (npm ci) must hold both SDKs.
func RunSDK(t testing.TB, c Call) Outcome {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("gatewaytest: cannot locate sdk.mjs")
	}
	script := filepath.Join(filepath.Dir(file), "sdk.mjs")
	requireSDKs(t, filepath.Dir(file))
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("gatewaytest: node is not on PATH (%v): install Node.js 20 or newer", err)
	}
	in, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("gatewaytest: encoding the call: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gatewaytest: running node %s: %v\n%s", script, err, stderr.String())
	}
	var o Outcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("gatewaytest: reading the SDK's report %q: %v", out, err)
	}
	return o
}

// RequireSDKs ends t, as RunSDK would, unless both SDKs are installed: for
// the top of a test that checks, after subtests that call RunSDK, what they
// sent (a skipped subtest sent nothing).
func RequireSDKs(t testing.TB) {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("gatewaytest: cannot locate sdk.mjs")
	}
	requireSDKs(t, filepath.Dir(file))
}

// requireSDKs ends t unless node finds both SDKs from dir: skipped on a
// clone where npm ci has not run, failed where it has (scripts/test sets
// MCPROXY_REQUIRE_NPM), as testenv's npm helpers do (which this package,
// not a _test.go file, may not import).
func requireSDKs(t testing.TB, dir string) {
	t.Helper()
	for _, pkg := range []string{"@anthropic-ai/sdk", "openai"} {
		if nodePackage(dir, pkg) {
			continue
		}
		if os.Getenv(requireNPMEnv) != "" {
			t.Fatalf("gatewaytest: npm package %s is missing: run npm ci in the repository root", pkg)
		}
		t.Skipf("gatewaytest: npm package %s is missing: run npm ci in the repository root (skipped; %s=1 makes it fail)", pkg, requireNPMEnv)
	}
}

// requireNPMEnv is testenv.RequireNPMEnv.
const requireNPMEnv = "MCPROXY_REQUIRE_NPM"

// nodePackage reports whether node would find pkg from dir: in a
// node_modules of dir or of a directory above it.
func nodePackage(dir, pkg string) bool {
	for {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
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
