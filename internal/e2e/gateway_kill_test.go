package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// killModel is the scripted model of the kill tests: while the request it
// sees offers Compress and holds at least four ref tags, and it has not yet
// been answered, it compresses everything from the second ref (the first
// is the task, which is never compressed) to the third-to-last; every other request gets "final answer". stallCompress
// holds that Compress answer part way through its stream; stallAfter holds
// the request that follows it (the gateway's continuation).
type killModel struct {
	mu            sync.Mutex
	compressed    bool
	stallCompress bool
	stallAfter    bool
}

var killRefTag = regexp.MustCompile(`\[(m\d{5}) · [^\]]+ tok\]`)

func (m *killModel) script(r *scriptedmodel.Request) scriptedmodel.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	var tags []string
	for _, t := range killRefTag.FindAllSubmatch(r.Body, -1) {
		tags = append(tags, string(t[1]))
	}
	offered := bytes.Contains(r.Body, []byte(`"name":"`+noa.CompressToolName+`"`))
	if m.compressed || !offered || len(tags) < 4 {
		reply := scriptedmodel.Say("final answer")
		if m.compressed && m.stallAfter {
			m.stallAfter = false
			reply.Stall = true
		}
		return reply
	}
	args := fmt.Sprintf(`{"content":[{"start":%q,"end":%q,"topic":"file reads","summary":"Read files 0 to 7; each repeats a line naming its number."}]}`,
		tags[1], tags[len(tags)-3])
	reply := scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("toolu_c1", noa.CompressToolName, args)}}
	if m.stallCompress {
		m.stallCompress = false
		reply.Stall, reply.StallAfter = true, 3
		return reply
	}
	m.compressed = true
	return reply
}

// killConfig writes a config whose gateway sends to up, with
// kill-test-model's window the smallest allowed; it returns the config's
// path and the data directory.
func killConfig(t *testing.T, up *scriptedmodel.Server) (cfg, data string) {
	t.Helper()
	dir := t.TempDir()
	data = filepath.Join(dir, "data")
	cfg = writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   data,
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL},
			// The tests stop mcproxy inside noa's Compress round, the one
			// a conversation's first compression falls back to.
			"summary_round": false,
			"models":        map[string]any{"kill-test-model": map[string]any{"context_window": config.MinContextWindow}}},
	})
	return cfg, data
}

// killConversation is a tool-heavy conversation: eight file reads, then a
// question.
func killConversation(stream bool) []byte {
	msgs := []any{map[string]any{"role": "user", "content": "Read the files and tell me about them."}}
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("toolu_r%02d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/f%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": fmt.Sprintf("file %d: ", i) + strings.Repeat(fmt.Sprintf("line of file %d. ", i), 80)}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "I have read them."},
		map[string]any{"role": "user", "content": "What was in file 7?"})
	b, _ := json.Marshal(map[string]any{"model": "kill-test-model", "max_tokens": 256, "stream": stream, "system": "You are terse.", "messages": msgs,
		"tools": []any{map[string]any{"name": "read_file", "input_schema": map[string]any{"type": "object"}}}})
	return b
}

// TestGatewayKilledMidCompress kills the real binary with SIGKILL at the two
// moments of a hidden Compress round that a process can be caught in from
// outside: while the model's Compress answer is still streaming in (nothing
// applied yet), and after the gateway applied it and waits on the model's
// continuation (applied, the client not yet answered). The client, which got
// no answer, sends its request again to a restarted mcproxy on the same data
// directory: the conversation is found again, continues from a consistent
// state (the compression kept when it was applied, offered again when it was
// not), and nothing is recorded twice. Kills inside the host's own Compress
// steps (archive written, transcript appended, state saved) are the session
// package's TestSIGKILLMidCompress.
func TestGatewayKilledMidCompress(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	for _, tc := range []struct {
		name          string
		stream        bool
		stallCompress bool
		wantKept      bool
	}{
		{name: "while the Compress answer streams", stream: true, stallCompress: true},
		{name: "after Compress was applied", wantKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &killModel{stallCompress: tc.stallCompress, stallAfter: !tc.stallCompress}
			up := scriptedmodel.New(model.script)
			defer up.Close()
			cfg, data := killConfig(t, up)
			body := killConversation(tc.stream)

			base, p := serveHTTP(t, cfg)
			sent := make(chan error, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
				req.Header.Set("content-type", "application/json")
				req.Header.Set("x-api-key", "sk-kill")
				req.Header.Set("anthropic-version", "2023-06-01")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = readAll(resp)
					if err == nil {
						err = fmt.Errorf("answered %s before the kill", resp.Status)
					}
				}
				sent <- err
			}()
			// The moment to kill: the stalled request has reached the model.
			wantSeen := 1
			if !tc.stallCompress {
				wantSeen = 2
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(up.Requests()) < wantSeen {
				if time.Now().After(deadline) || p.exited() {
					t.Fatalf("the model saw %d requests, want %d before the kill\n%s", len(up.Requests()), wantSeen, p.output())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-p.done
			if err := <-sent; err == nil {
				t.Fatal("the killed request got an answer")
			}
			seenBefore := len(up.Requests())

			// The client sends the same request again, through its SDK, to
			// mcproxy started again on the same data directory.
			base, p = serveHTTP(t, cfg)
			var sdkBody map[string]any
			_ = json.Unmarshal(body, &sdkBody)
			delete(sdkBody, "stream")
			kind := "create"
			if tc.stream {
				kind = "stream"
			}
			o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: base, APIKey: "sk-kill", Kind: kind, Body: sdkBody})
			if !o.OK || !strings.Contains(string(o.Result), "final answer") {
				t.Fatalf("retried request: ok=%v %s %s\n%s", o.OK, o.Message, o.Result, p.output())
			}
			after := up.Requests()[seenBefore:]
			first := after[0].Body
			compressedFirst := inMessages(after[0], noa.SummaryHeader)
			if tc.wantKept {
				if !compressedFirst || bytes.Contains(first, []byte("line of file 2. line of file 2.")) {
					t.Errorf("the retried request was forwarded without the compression applied before the kill:\n%.600s", first)
				}
				if len(after) != 1 {
					t.Errorf("the model got %d requests after the restart, want 1 (nothing to compress again)", len(after))
				}
			} else {
				if compressedFirst {
					t.Errorf("the retried request carries a compression that was never applied")
				}
				if len(after) != 2 || !inMessages(after[1], noa.SummaryHeader) {
					t.Errorf("the model got %d requests after the restart, want the Compress round again (2, the second compressed)", len(after))
				}
			}

			// On disk: one conversation, its state current, each message
			// once, and exactly one active block whose original is archived.
			p.cmd.Process.Signal(os.Interrupt)
			<-p.done
			counter, err := tokens.New(tokens.CL100KBase)
			if err != nil {
				t.Fatal(err)
			}
			opts := session.Options{Dir: session.SessionsDir(data), Count: counter.Count}
			list, err := session.List(opts)
			if err == nil && len(list) == 1 {
				// What a user reads: the CLI on the same data directory.
				code, out, errOut := runBinary(t, 30*time.Second, "sessions", "show", list[0].ID, "--config", cfg)
				if code != 0 || !regexp.MustCompile(`state\.json\s+current`).MatchString(out) {
					t.Errorf("mcproxy sessions show: exit %d\n%s%s", code, out, errOut)
				}
			}
			if err != nil || len(list) != 1 {
				t.Fatalf("sessions on disk: %v %v, want one conversation", list, err)
			}
			in, err := session.Inspect(opts, list[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if in.StateFile.Check != session.StateCurrent || in.TornTail {
				t.Errorf("state.json %+v, torn tail %v; want current and whole", in.StateFile, in.TornTail)
			}
			active := 0
			for _, b := range in.Blocks {
				if b.Active {
					active++
				}
			}
			if active != 1 {
				t.Errorf("got %d active blocks, want 1 (%+v)", active, in.Blocks)
			}
			h, err := session.Open(opts, list[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			seen := map[string]bool{}
			for _, m := range h.Messages() {
				if seen[m.ID] {
					t.Errorf("message %s recorded twice", m.ID)
				}
				seen[m.ID] = true
			}
			if want := 1 + 2*8 + 2 + 2; len(seen) != want {
				t.Errorf("the conversation holds %d messages, want %d (the client's plus the Compress call and result)", len(seen), want)
			}
		})
	}
}

// inMessages reports whether one of a forwarded request's messages holds s.
func inMessages(r *scriptedmodel.Request, s string) bool {
	for _, m := range r.Messages() {
		if bytes.Contains(m, []byte(s)) {
			return true
		}
	}
	return false
}

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(resp.Body)
	return b.Bytes(), err
}
