package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// cpuTicks is the CPU time process pid has used (user and system), in
// clock ticks, from /proc/<pid>/stat.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (which may hold spaces) start
	// with the state; utime and stime are the 14th and 15th of the line.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("reading /proc/%d/stat: %q", pid, b)
	}
	return utime + stime
}

// ticksPerSecond is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const ticksPerSecond = 100

// TestGatewayParsingBounded drives the real binary with what cost it
// unbounded CPU or memory, or crashed its handler (issue 26): bodies
// nested 16k and 100k deep (refused, the CPU they cost logged), malformed model streams, an answer and an
// event over gateway.limits.
func TestGatewayParsingBounded(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	streams := map[string]string{
		"stray delta": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"bad JSON": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"big event": "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: ping\ndata: {\"type\":\"ping\",\"pad\":\"" + big + "\"}\n\n",
	}
	up := scriptedmodel.New(func(r *scriptedmodel.Request) scriptedmodel.Reply {
		if s, ok := streams[r.Header.Get("X-Case")]; ok {
			return scriptedmodel.Reply{Raw: &scriptedmodel.Raw{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: []byte(s)}}
		}
		if r.Header.Get("X-Case") == "big answer" {
			return scriptedmodel.Say(strings.Repeat(big, 8))
		}
		return scriptedmodel.Say("fine")
	})
	defer up.Close()
	dir := t.TempDir()
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   filepath.Join(dir, "data"),
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL},
			"limits":    map[string]any{"max_stream_event_bytes": 100 << 10, "max_answer_bytes": 1 << 20}},
	})
	base, p := serveHTTP(t, cfg)
	pid := p.cmd.Process.Pid
	post := func(body, kind string) (*http.Response, string) {
		resp, b := gatewaytest.Do(t, context.Background(), http.MethodPost, base+"/v1/messages", body, map[string]string{"X-Case": kind, "x-api-key": "k"})
		return resp, string(b)
	}

	for _, depth := range []int{16000, 100000} {
		deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
		body := `{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":` + deep + `}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
		before := cpuTicks(t, pid)
		resp, b := post(body, "")
		used := cpuTicks(t, pid) - before
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "gateway.limits.max_json_depth") || !strings.Contains(b, `"invalid_request_error"`) {
			t.Errorf("depth %d (%d KB): got %d %s, want a 400 naming gateway.limits.max_json_depth", depth, len(body)>>10, resp.StatusCode, b)
		}
		// Logged, not asserted (no timed assertions): the refusal above
		// is the check, TestCanonicalizeIsLinear counts the work. Before
		// the fix the 100k body took 54 s of CPU; now a few ms.
		t.Logf("depth %d (%d KB): mcproxy used %d ms of CPU", depth, len(body)>>10, used*1000/ticksPerSecond)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the provider got %d requests, want none (over-deep bodies are refused, not forwarded)", n)
	}

	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for kind, want := range map[string]string{
		"stray delta": "which no content_block_start opened",
		"bad JSON":    "not a JSON object",
		"big event":   "(gateway.limits.max_stream_event_bytes)",
	} {
		resp, b := post(`{"model":"claude-sonnet-4-5","max_tokens":5,"stream":true,`+msgs+`}`, kind)
		events, err := gatewaytest.ParseSSE([]byte(b))
		if resp.StatusCode != http.StatusOK || err != nil || len(events) == 0 {
			t.Fatalf("%s: got %d %v %s", kind, resp.StatusCode, err, b)
		}
		if last := events[len(events)-1]; last.Name != "error" || !strings.Contains(last.Data, want) {
			t.Errorf("%s: the stream ends with %s %s, want an error event saying %q", kind, last.Name, last.Data, want)
		}
	}
	resp, b := post(`{"model":"claude-sonnet-4-5","max_tokens":5,`+msgs+`}`, "big answer")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(b, "(gateway.limits.max_answer_bytes)") {
		t.Errorf("big answer: got %d %.300s, want 502 naming gateway.limits.max_answer_bytes", resp.StatusCode, b)
	}
	if strings.Contains(strings.ToLower(p.output()), "panic") {
		t.Errorf("mcproxy's log has a panic:\n%s", p.output())
	}
}
