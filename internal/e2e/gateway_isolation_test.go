package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// archiveModel is the scripted model of TestGatewaySessionHeaderIsolation:
// offered read_archive, it asks for ref once per conversation; then it
// answers "done".
type archiveModel struct {
	mu  sync.Mutex
	ref string
}

func (m *archiveModel) script(r *scriptedmodel.Request) scriptedmodel.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	offered := bytes.Contains(r.Body, []byte(`"name":"`+session.ReadArchiveToolName+`"`))
	if !offered || bytes.Contains(r.Body, []byte(`"tool_use_id":"toolu_ra"`)) {
		return scriptedmodel.Say("done")
	}
	return scriptedmodel.Reply{Parts: []scriptedmodel.Part{
		scriptedmodel.ToolCall("toolu_ra", session.ReadArchiveToolName, fmt.Sprintf(`{"ref":%q}`, m.ref))}}
}

// victim is an MCP session whose data no gateway request may reach.
type victim struct {
	name, id, ref, marker string
	transcript            []byte
}

// recordVictim has c call the echo tool with a long message tagged marker,
// so the session records it and archives its original (it is over
// max_result_tokens), and returns the session's ref of the result.
func recordVictim(t *testing.T, c *client.Client, marker string) string {
	t.Helper()
	res, err := tryCall(c, "call_tool", map[string]any{"name": "alpha:echo", "arguments": map[string]any{"message": prose(marker, 7, 3000)}})
	if err != nil || res.IsError {
		t.Fatalf("call_tool alpha:echo: %v %v", err, res)
	}
	ref := refOf(res)
	if ref == "" || !strings.Contains(text(res), noa.TruncationMarker) {
		t.Fatalf("want a ref tag and a cut result, got %.500q", text(res))
	}
	return ref
}

// TestGatewaySessionHeaderIsolation sends gateway requests whose
// x-mcproxy-session names MCP sessions: one ended by DELETE, one from an
// earlier run of the binary, and a stdio one. Each gets a fresh
// conversation: the model reads none of the session's calls or results,
// read_archive does not serve its archived original, and its transcript
// gains nothing.
func TestGatewaySessionHeaderIsolation(t *testing.T) {
	alpha := newGoUpstream(t, "alpha")
	model := &archiveModel{}
	up := scriptedmodel.New(model.script)
	defer up.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	sessions := session.SessionsDir(data)
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"alpha": map[string]any{"url": alpha.url()}},
		"data_dir":   data,
		"noa":        map[string]any{"max_result_tokens": config.MinMaxResultTokens},
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL},
			"models":    map[string]any{"iso-model": map[string]any{"context_window": 50000}},
			// Engaged from the first request, so read_archive is offered.
			"compress_at": 1e-6},
	})
	var victims []*victim

	// (b) A session of an earlier run of the binary.
	base, p := serveHTTP(t, cfg)
	c, _ := connectHTTP(t, base)
	v := &victim{name: "earlier run", id: c.GetSessionId(), marker: "VICTIM-EARLIER-RUN"}
	v.ref = recordVictim(t, c, v.marker)
	victims = append(victims, v)
	c.Close()
	stopProc(t, p)

	// (c) A stdio session.
	sc := startStdio(t, "serve", "--stdio", "--config", cfg)
	initialize(t, sc)
	v = &victim{name: "stdio", marker: "VICTIM-STDIO"}
	v.ref = recordVictim(t, sc, v.marker)
	sc.Close()
	entries, _ := os.ReadDir(sessions)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "stdio-") {
			v.id = e.Name()
		}
	}
	if v.id == "" {
		t.Fatalf("no stdio session under %s", sessions)
	}
	victims = append(victims, v)

	// (a) A session of this run, ended by DELETE.
	base, p = serveHTTP(t, cfg)
	c, _ = connectHTTP(t, base)
	v = &victim{name: "ended", id: c.GetSessionId(), marker: "VICTIM-ENDED"}
	v.ref = recordVictim(t, c, v.marker)
	del, _ := http.NewRequest(http.MethodDelete, base+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", v.id)
	resp, err := http.DefaultClient.Do(del)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE /mcp: %v %v", resp, err)
	}
	resp.Body.Close()
	victims = append(victims, v)

	for _, v := range victims {
		tr, err := os.ReadFile(filepath.Join(sessions, v.id, session.TranscriptFile))
		if err != nil || !bytes.Contains(tr, []byte(v.marker)) {
			t.Fatalf("%s session %s: transcript %v, want it on disk holding %s", v.name, v.id, err, v.marker)
		}
		v.transcript = tr
	}

	for i, v := range victims {
		t.Run(v.name, func(t *testing.T) {
			model.mu.Lock()
			model.ref = v.ref
			model.mu.Unlock()
			seen := len(up.Requests())
			body := fmt.Sprintf(`{"model":"iso-model","max_tokens":64,"messages":[{"role":"user","content":"hello, request %d"}]}`, i)
			resp, out := gatewaytest.Do(t, context.Background(), http.MethodPost, base+"/v1/messages", body, map[string]string{
				"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-attacker",
				"X-Mcproxy-Session": v.id})
			if resp.StatusCode != 200 || !bytes.Contains(out, []byte("done")) {
				t.Fatalf("got %d %s\n%s", resp.StatusCode, out, p.output())
			}
			reqs := up.Requests()[seen:]
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2 (read_archive, then the answer)", len(reqs))
			}
			for _, r := range reqs {
				if bytes.Contains(r.Body, []byte(v.marker)) {
					t.Errorf("the model read the %s session's data (%s):\n%.2000s", v.name, v.marker, r.Body)
				}
			}
			if !bytes.Contains(reqs[1].Body, []byte(`"tool_use_id":"toolu_ra"`)) {
				t.Errorf("the second request carries no read_archive result:\n%.2000s", reqs[1].Body)
			}
			tr, err := os.ReadFile(filepath.Join(sessions, v.id, session.TranscriptFile))
			if err != nil || !bytes.Equal(tr, v.transcript) {
				t.Errorf("the %s session's transcript changed (%v): %d bytes, was %d", v.name, err, len(tr), len(v.transcript))
			}
			if _, err := os.Stat(filepath.Join(sessions, v.id, session.HostConfigFile)); err == nil {
				t.Errorf("the gateway opened the %s session (it has a %s)", v.name, session.HostConfigFile)
			}
		})
	}
	if got := gatewayDirs(t, sessions); len(got) != len(victims) {
		t.Errorf("gateway conversations on disk: %v, want %d fresh ones", got, len(victims))
	}
}

// gatewayDirs lists the gateway conversations' session directories.
func gatewayDirs(t *testing.T, sessions string) []string {
	t.Helper()
	entries, err := os.ReadDir(sessions)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "gw-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestGatewayCredentialScopes sends one history with two API keys: the
// second key gets a conversation of its own, which holds none of the
// first's compression, and the first key continues its own.
func TestGatewayCredentialScopes(t *testing.T) {
	model := &killModel{}
	up := scriptedmodel.New(model.script)
	defer up.Close()
	cfg, data := killConfig(t, up)
	base, p := serveHTTP(t, cfg)
	send := func(key string, body []byte, name ...string) []*scriptedmodel.Request {
		t.Helper()
		seen := len(up.Requests())
		header := map[string]string{"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": key}
		if len(name) > 0 {
			header["X-Mcproxy-Session"] = name[0]
		}
		resp, out := gatewaytest.Do(t, context.Background(), http.MethodPost, base+"/v1/messages", string(body), header)
		if resp.StatusCode != 200 || !bytes.Contains(out, []byte("final answer")) {
			t.Fatalf("key %s: got %d %s\n%s", key, resp.StatusCode, out, p.output())
		}
		return up.Requests()[seen:]
	}
	body := killConversation(false)
	if reqs := send("sk-first", body); len(reqs) != 2 || !inMessages(reqs[1], noa.SummaryHeader) {
		t.Fatalf("the first key's request: %d model requests, want the Compress round and a compressed continuation", len(reqs))
	}
	for _, r := range send("sk-second", body) {
		if inMessages(r, noa.SummaryHeader) || bytes.Contains(r.Body, []byte("Read files 0 to 7")) {
			t.Errorf("the second key's request carries the first key's summary:\n%.2000s", r.Body)
		}
	}
	sessions := session.SessionsDir(data)
	if got := gatewayDirs(t, sessions); len(got) != 2 {
		t.Errorf("sessions after two keys: %v, want two conversations", got)
	}

	// /status lists the conversations' ids; a third key naming one in its
	// session header still gets a conversation of its own.
	resp, out := gatewaytest.Do(t, context.Background(), http.MethodGet, base+"/status", "", nil)
	var status struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &status); resp.StatusCode != 200 || err != nil || len(status.Sessions) != 2 {
		t.Fatalf("/status: %d %v %s, want two sessions", resp.StatusCode, err, out)
	}
	for _, listed := range status.Sessions {
		for _, r := range send("sk-third", body, listed.ID) {
			if inMessages(r, noa.SummaryHeader) {
				t.Errorf("a request naming %s from /status got the first key's summary", listed.ID)
			}
		}
	}
	if got := gatewayDirs(t, sessions); len(got) != 4 {
		t.Errorf("sessions after the third key: %v, want four conversations", got)
	}

	// The first key's next turn continues its own conversation.
	next := bytes.Replace(body, []byte(`{"content":"What was in file 7?","role":"user"}]`),
		[]byte(`{"content":"What was in file 7?","role":"user"},{"content":"final answer","role":"assistant"},{"content":"And file 3?","role":"user"}]`), 1)
	if bytes.Equal(next, body) {
		t.Fatal("the test could not extend the conversation")
	}
	if reqs := send("sk-first", next); len(reqs) != 1 || !inMessages(reqs[0], noa.SummaryHeader) {
		t.Errorf("the first key's next turn: %d model requests, want one projected through its compression", len(reqs))
	}
	if got := gatewayDirs(t, sessions); len(got) != 4 {
		t.Errorf("sessions after the first key continued: %v, want still four", got)
	}
}

// TestGatewayIndexFollowsRetention ages a conversation's session past
// noa.retention: the restarted binary removes it and forgets the
// conversation, so the same history starts a new one under a new id
// instead of reviving the removed id.
func TestGatewayIndexFollowsRetention(t *testing.T) {
	up := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("final answer") })
	defer up.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   data,
		// The MCP side off: only the gateway's manager prunes, so the
		// moment it forgets follows its own prune.
		"noa": map[string]any{"enabled": false, "retention": "30d"},
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL}},
	})
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"remember me"}]}`
	send := func(base string) {
		t.Helper()
		resp, out := gatewaytest.Do(t, context.Background(), http.MethodPost, base+"/v1/messages", body, map[string]string{
			"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-kept"})
		if resp.StatusCode != 200 {
			t.Fatalf("got %d %s", resp.StatusCode, out)
		}
	}
	base, p := serveHTTP(t, cfg)
	send(base)
	stopProc(t, p)
	sessions := session.SessionsDir(data)
	first := gatewayDirs(t, sessions)
	if len(first) != 1 {
		t.Fatalf("conversations: %v, want one", first)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	err := filepath.Walk(filepath.Join(sessions, first[0]), func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}

	base, p = serveHTTP(t, cfg)
	waitFor(t, 30*time.Second, "the conversation forgotten", func() bool {
		return strings.Contains(p.output(), "forgot the conversations whose sessions are gone")
	})
	send(base)
	if got := gatewayDirs(t, sessions); len(got) != 1 || got[0] == first[0] {
		t.Errorf("conversations after retention: %v, want one new one (not %s)", got, first[0])
	}
}
