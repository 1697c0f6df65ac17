package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A call with large arguments is sent by mcproxy itself (callBig) and
// behaves as the client's would: the upstream gets the arguments whole and
// the answer comes back, a cancelled call is cancelled upstream, and a
// small call still goes through mcp-go's client.
func TestBigCall(t *testing.T) {
	sc, dir := peerServer(t, "peer")
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{})
	callID := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "call-id"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	big := strings.Repeat("line \"quoted\" \\ with\ttabs, é and 日本\n", bigArgs/30)
	if got := text(call(t, m, "p", "echo", map[string]any{"text": big})); got != "echo: "+big {
		t.Errorf("the big echo came back with %d bytes, want %d", len(got), len("echo: "+big))
	}
	if id := callID(); !strings.HasPrefix(id, "mcproxy-") {
		t.Errorf("the big call's id is %q: it was not sent by callBig", id)
	}
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "small"})); got != "echo: small" {
		t.Errorf("got %q", got)
	}
	if id := callID(); strings.HasPrefix(id, "mcproxy-") {
		t.Errorf("the small call's id is %q: it should go through mcp-go's client", id)
	}

	cancelMidCall(t, m, dir, map[string]any{"ms": 60000, "pad": big})

	// A tool's own error result comes back decoded as the client decodes
	// it (the peer's raw tool always fails).
	res, err := m.Call(context.Background(), "p", "raw", map[string]any{"text": big})
	if err != nil || !res.IsError || text(res) != "raw always fails" {
		t.Errorf("raw with big arguments: %+v, %v; want its error result", res, err)
	}
	if id := callID(); !strings.HasPrefix(id, "mcproxy-") {
		t.Errorf("the big raw call's id is %q: it was not sent by callBig", id)
	}
}

// A big call given the client's JSON text of its arguments
// (WithArgumentsJSON) sends that text, in the client's order, rather than
// the map encoded again (issue 28).
func TestBigCallSendsClientJSON(t *testing.T) {
	t.Parallel()
	sc, dir := peerServer(t, "peer")
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{})
	big := strings.Repeat("line \"quoted\" \\ with\ttabs, é and 日本\n", bigArgs/30)
	args := map[string]any{"zz": 1.0, "text": big}
	enc, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"zz":1,"text":` + string(enc) + `}`)
	ctx, cancel := context.WithTimeout(WithArgumentsJSON(context.Background(), raw), 30*time.Second)
	defer cancel()
	res, err := m.Call(ctx, "p", "echo", args)
	if err != nil || text(res) != "echo: "+big {
		t.Fatalf("the big echo: %d bytes back, %v; want %d", len(text(res)), err, len("echo: "+big))
	}
	sent, err := os.ReadFile(filepath.Join(dir, "call-args"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sent, raw) {
		t.Errorf("the upstream got arguments starting %.40q (%d bytes), want the client's %.40q (%d bytes)", sent, len(sent), raw, len(raw))
	}
}

func TestTextSize(t *testing.T) {
	args := map[string]any{"a": "xyz", "list": []any{"12", 3.0, map[string]any{"k": "vv"}}}
	if n := textSize(args, 1000); n != len("a")+3+len("list")+2+len("k")+2 {
		t.Errorf("textSize = %d", n)
	}
	if n := textSize(map[string]any{"a": strings.Repeat("x", 100), "b": strings.Repeat("y", 100)}, 50); n < 50 || n > 102 {
		t.Errorf("textSize stopped at %d, want it to stop soon after 50", n)
	}
}
