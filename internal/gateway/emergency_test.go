package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// numbered is a text of about tokens tokens (four bytes each) in numbered
// lines, so any part of it can be told apart.
func numbered(prefix string, tokens int) string {
	var b strings.Builder
	for i := 0; b.Len() < tokens*4; i++ {
		fmt.Fprintf(&b, "%s line %06d: the quick brown fox jumps over the lazy dog\n", prefix, i)
	}
	return b.String()
}

// readTexts is every string in a JSON body, joined: what the model reads.
func readTexts(t *testing.T, body []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

var cutPointer = regexp.MustCompile(`read_archive \{"ref":"([^"]+)","offset":(\d+),"limit":(\d+)\}`)

// TestEmergencyCutThroughTheGateway: a conversation whose recent turns
// alone exceed a 40K window (a 60K-token answer, a pasted document, a giant
// tool result) reaches the scripted model under the window, the cut named
// in the text, and the model gets the cut bytes back verbatim with the
// read_archive call the cut names (issue 27).
func TestEmergencyCutThroughTheGateway(t *testing.T) {
	const window = 40000
	huge := numbered("original", 60000)
	cases := []struct {
		name string
		msgs []any
	}{
		{"assistant message of 60K", []any{
			map[string]any{"role": "user", "content": "Write the whole report."},
			map[string]any{"role": "assistant", "content": huge},
			map[string]any{"role": "user", "content": "Now shorten it."},
		}},
		{"pasted document", []any{
			map[string]any{"role": "user", "content": "Help me with a document."},
			map[string]any{"role": "assistant", "content": "Paste it."},
			map[string]any{"role": "user", "content": huge},
		}},
		{"giant tool result in the recent zone", []any{
			map[string]any{"role": "user", "content": "Read the log."},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_log", "name": "read_file", "input": map[string]any{"path": "/log"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_log", "content": huge}}},
		}},
	}
	hostsOf := map[string]func(t *testing.T) Hosts{
		"session": func(t *testing.T) Hosts { return sessionHosts(t, t.TempDir()) },
		"memory":  func(*testing.T) Hosts { return &MemoryHosts{} },
	}
	for _, kind := range []string{"session", "memory"} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				var mu sync.Mutex
				var pointer []string
				script := func(r *scriptedmodel.Request) scriptedmodel.Reply {
					mu.Lock()
					defer mu.Unlock()
					if r.Seq == 1 {
						if pointer = cutPointer.FindStringSubmatch(readTexts(t, r.Body)); pointer != nil {
							return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("toolu_ra", "read_archive",
								fmt.Sprintf(`{"ref":%q,"offset":%s,"limit":4000}`, pointer[1], pointer[2]))}}
						}
					}
					return scriptedmodel.Say("done")
				}
				hosts := hostsOf[kind](t)
				r := newRig(t, script, func(o *Options) {
					o.Hosts = hosts
					o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: window}}
				})
				body, _ := json.Marshal(anthropicBody(tc.msgs))
				resp, out := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(body), map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "done") {
					t.Fatalf("got %d %s", resp.StatusCode, out)
				}
				reqs := r.up.Requests()
				for i, q := range reqs {
					if n := scriptedmodel.EstimateTokens(q.Body); n > window {
						t.Errorf("request %d is %d tokens, over the %d window", i+1, n, window)
					}
					if strings.Contains(readTexts(t, q.Body), huge) {
						t.Errorf("request %d carries the huge text whole", i+1)
					}
				}
				if pointer == nil {
					t.Fatalf("the first request names no read_archive call for the cut:\n%.3000s", readTexts(t, reqs[0].Body))
				}
				if len(reqs) != 2 {
					t.Fatalf("upstream got %d requests, want 2 (the cut view, then the read_archive round)", len(reqs))
				}
				off, _ := strconv.Atoi(pointer[2])
				if n, _ := strconv.Atoi(pointer[3]); off <= 0 || off+n > len(huge) {
					t.Fatalf("the cut names bytes %d+%d of a %d-byte original", off, n, len(huge))
				}
				if got := readTexts(t, reqs[1].Body); !strings.Contains(got, huge[off:off+4000]) {
					t.Errorf("the read_archive round does not give back bytes %d-%d of the original", off, off+4000)
				}
			})
		}
	}
}

// TestEmergencyCutsWholeImagesThroughTheGateway: twenty full-size images
// (about 3,300 tokens each by the gateway's estimate) in one user turn do
// not fit a 40K window; the model gets as many as fit, whole, and a note
// in place of each image left out.
func TestEmergencyCutsWholeImagesThroughTheGateway(t *testing.T) {
	const window, n = 40000, 20
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1568, 1568))); err != nil {
		t.Fatal(err)
	}
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(buf.Bytes())}}
	content := []any{map[string]any{"type": "text", "text": "Compare these screenshots."}}
	for range n {
		content = append(content, img)
	}
	per := imageTokens(1568, 1568)
	for _, kind := range []string{"session", "memory"} {
		t.Run(kind, func(t *testing.T) {
			var hosts Hosts = &MemoryHosts{}
			if kind == "session" {
				hosts = sessionHosts(t, t.TempDir())
			}
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("done") }, func(o *Options) {
				o.Hosts = hosts
				o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: window}}
			})
			msgs := []any{
				map[string]any{"role": "user", "content": "Review my UI."},
				map[string]any{"role": "assistant", "content": "Send the screenshots."},
				map[string]any{"role": "user", "content": content},
			}
			body, _ := json.Marshal(anthropicBody(msgs))
			resp, out := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(body), map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d %s", resp.StatusCode, out)
			}
			reqs := r.up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(reqs))
			}
			sent := strings.Count(string(reqs[0].Body), `"type":"image"`)
			notes := strings.Count(readTexts(t, reqs[0].Body), "an attachment of about")
			if sent == 0 || sent+notes != n || sent*per >= window {
				t.Errorf("got %d images (%d tokens) and %d notes, want the %d images split into whole ones under the %d window and notes", sent, sent*per, notes, n, window)
			}
		})
	}
}
