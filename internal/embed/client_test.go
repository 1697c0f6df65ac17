package embed

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
)

func newServer(t *testing.T, opts embedtest.Options) *embedtest.Server {
	t.Helper()
	s := embedtest.New(opts)
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, opts ClientOptions) *Client {
	t.Helper()
	c, err := NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func TestClientBatchesAndOrder(t *testing.T) {
	srv := newServer(t, embedtest.Options{Dimensions: 32, Model: "toy"})
	c := newClient(t, ClientOptions{URL: srv.URL, Model: "toy", BatchSize: 3})
	texts := []string{"one", "two", "three", "four", "five", "six", "seven"}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 3, 1}, srv.Batches()); diff != "" {
		t.Errorf("batch sizes mismatch (-want +got):\n%s", diff)
	}
	// The server answers each batch in reverse order; the index field must
	// put every vector back with its text.
	for i, text := range texts {
		if diff := cmp.Diff(embedtest.Embed(text, 32), got[i]); diff != "" {
			t.Errorf("vector %d (%q) is not the text's own (-want +got):\n%s", i, text, diff)
		}
	}
}

func TestClientURLForms(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/embeddings"} {
		c := newClient(t, ClientOptions{URL: u, Model: "m"})
		if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
			t.Errorf("URL %q: got %v, want success", u, err)
		}
	}
}

func TestClientAuth(t *testing.T) {
	srv := newServer(t, embedtest.Options{APIKey: "sk-right"})
	good := newClient(t, ClientOptions{URL: srv.URL, Model: "m", APIKey: "sk-right"})
	if _, err := good.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatalf("with the right key: got %v, want success", err)
	}
	bad := newClient(t, ClientOptions{URL: srv.URL, Model: "m", APIKey: "sk-wrong"})
	_, err := bad.Embed(context.Background(), []string{"x"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("with a wrong key: got %v, want a 401 StatusError", err)
	}
	if strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("error %q shows the API key", err)
	}
	none := newClient(t, ClientOptions{URL: srv.URL, Model: "m"})
	none.Embed(context.Background(), []string{"x"})
	want := []string{"Bearer sk-right", "Bearer sk-wrong", ""}
	if diff := cmp.Diff(want, srv.Authorizations()); diff != "" {
		t.Errorf("Authorization headers mismatch (-want +got):\n%s", diff)
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name  string
		fault embedtest.Fault
		model string
		want  string
	}{
		{"server error", embedtest.Status500, "m", "status 500 Internal Server Error: the model crashed"},
		{"malformed JSON", embedtest.MalformedJSON, "m", "not an embeddings response"},
		{"wrong count", embedtest.WrongCount, "m", "has 1 embeddings for 2 inputs"},
		{"unknown model", embedtest.None, "other", `status 404 Not Found: model "other" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, embedtest.Options{Model: "m"})
			srv.SetFault(tc.fault)
			c := newClient(t, ClientOptions{URL: srv.URL, Model: tc.model})
			got, err := c.Embed(context.Background(), []string{"a", "b"})
			if err == nil {
				t.Fatalf("got %d vectors and no error, want an error containing %q", len(got), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.URL+"/embeddings") {
				t.Errorf("got error %q, want it to name the endpoint and contain %q", err, tc.want)
			}
		})
	}
}

func TestClientTimeout(t *testing.T) {
	srv := newServer(t, embedtest.Options{})
	srv.SetFault(embedtest.Hang)
	c := newClient(t, ClientOptions{URL: srv.URL, Model: "m", Timeout: 50 * time.Millisecond})
	_, err := c.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("got %v, want a deadline error saying it waited 50ms", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}

func TestClientRedactsURL(t *testing.T) {
	// Nothing listens on port 1; the transport error would normally quote
	// the whole URL, credentials and query included.
	c := newClient(t, ClientOptions{URL: "http://user:pw-secret@127.0.0.1:1/v1?api-key=q-secret", Model: "m"})
	_, err := c.Embed(context.Background(), []string{"x"})
	if err == nil {
		t.Fatal("got no error from a closed port, want one")
	}
	for _, s := range []string{"pw-secret", "q-secret"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q shows %q", err, s)
		}
	}
	if got, want := c.Endpoint(), "http://127.0.0.1:1/v1/embeddings"; got != want {
		t.Errorf("Endpoint: got %q, want %q", got, want)
	}
}

func TestClientRejectsBadAnswers(t *testing.T) {
	tests := []struct {
		name, body string
		dims       int
		want       string
	}{
		{"repeated index", `{"data":[{"embedding":[1],"index":0},{"embedding":[1],"index":0}]}`, 0, "repeated or out-of-range index 0"},
		{"index out of range", `{"data":[{"embedding":[1],"index":0},{"embedding":[1],"index":5}]}`, 0, "index 5"},
		{"mixed lengths", `{"data":[{"embedding":[1,2],"index":0},{"embedding":[1],"index":1}]}`, 0, "mixes vectors of 2 and 1 dimensions"},
		{"empty vector", `{"data":[{"embedding":[],"index":0},{"embedding":[1],"index":1}]}`, 0, "empty embedding for input 0"},
		{"wrong dimensions", `{"data":[{"embedding":[1,2],"index":0},{"embedding":[1,2],"index":1}]}`, 3, "has 2 dimensions, want 3"},
		{"huge value", `{"data":[{"embedding":[1e300],"index":0},{"embedding":[1],"index":1}]}`, 0, "non-finite value"},
		{"plain-text error", ``, 0, "status 502 Bad Gateway: upstream gone"},
		{"string error", ``, 0, "status 400 Bad Request: input too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A fault no well-behaved provider shows on demand, so a
			// hand-written answer stands in for it.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch tc.name {
				case "plain-text error":
					http.Error(w, "upstream gone", http.StatusBadGateway)
				case "string error":
					w.WriteHeader(http.StatusBadRequest)
					w.Write([]byte(`{"error": "input too long"}`))
				default:
					w.Write([]byte(tc.body))
				}
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, ClientOptions{URL: srv.URL, Model: "m", Dimensions: tc.dims})
			_, err := c.Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestClientDimensionsAndFingerprint(t *testing.T) {
	srv := newServer(t, embedtest.Options{Dimensions: 64})
	c := newClient(t, ClientOptions{URL: srv.URL, Model: "toy", Dimensions: 16})
	got, err := c.Embed(context.Background(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 16 {
		t.Errorf("got %d dimensions, want the 16 requested", len(got[0]))
	}
	if fp := c.Fingerprint(); fp != "toy@16" {
		t.Errorf("Fingerprint: got %q, want %q", fp, "toy@16")
	}
}

func TestNewClientChecks(t *testing.T) {
	for _, o := range []ClientOptions{{URL: "", Model: "m"}, {URL: "ftp://h", Model: "m"}, {URL: "http://h"}, {URL: "http://h", Model: "m", BatchSize: -1}} {
		if _, err := NewClient(o); err == nil {
			t.Errorf("NewClient(%+v): got no error, want one", o)
		}
	}
}
