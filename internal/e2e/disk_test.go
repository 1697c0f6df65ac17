package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/gateway"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// seenLog is what an upstream tool was called with: the first bytes of
// each message, in order.
type seenLog struct {
	mu   sync.Mutex
	msgs []string
}

func (s *seenLog) add(m string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m[:min(len(m), 40)])
}

func (s *seenLog) saw(marker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if strings.HasPrefix(m, marker) {
			return true
		}
	}
	return false
}

// lastText is the text of a result's last content block.
func lastText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := mcp.AsTextContent(res.Content[len(res.Content)-1])
	if tc == nil {
		return ""
	}
	return tc.Text
}

// recordPolicies are the values of noa.on_record_error the full-disk
// tests run under: the default (left out) and "refuse".
var recordPolicies = []recordPolicy{{"", "report (default)"}, {"refuse", "refuse"}}

type recordPolicy struct{ policy, name string }

// noa is the config's noa object for the policy.
func (p recordPolicy) noa() map[string]any {
	if p.policy == "" {
		return map[string]any{}
	}
	return map[string]any{"on_record_error": p.policy}
}

// sessionsOf is the sessions of the running mcproxy's /status.
func sessionsOf(t *testing.T, base string) []dashboard.Session {
	t.Helper()
	resp, err := http.Get(base + dashboard.PathStatus)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st dashboard.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decoding /status: %v", err)
	}
	return st.Sessions
}

// recordingOf is /status's recording of session id: nil when recording
// works, and when the session is not listed (listed reports which).
func recordingOf(t *testing.T, base, id string) (rec *dashboard.Recording, listed bool) {
	t.Helper()
	for _, s := range sessionsOf(t, base) {
		if s.ID == id {
			return s.Recording, true
		}
	}
	return nil, false
}

// TestNoaFullDisk runs mcproxy with its sessions on a small tmpfs that the
// test fills to ENOSPC (issue 26: a call must never leave a silent gap in
// its session's transcript). With noa.on_record_error "report" (the
// default) a call that cannot be recorded is answered with the upstream's
// result and a note saying it was not recorded; with "refuse" it is
// refused before the upstream sees it. Either way /status shows the
// session's recording failing, and once space returns recording resumes
// and the transcript reads back whole (`mcproxy sessions show`).
func TestNoaFullDisk(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	sessions := filepath.Join(data, "sessions")
	testenv.Tmpfs(t, sessions, 2<<20)
	up := newGoUpstream(t, "rec")
	seen := &seenLog{}
	up.mcp.AddTool(mcp.NewTool("log", mcp.WithDescription("Log a message and return it."), mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			m := req.GetString("message", "")
			seen.add(m)
			return mcp.NewToolResultText(m), nil
		})

	for _, pol := range recordPolicies {
		policy, name, noaCfg := pol.policy, pol.name, pol.noa()
		t.Run(name, func(t *testing.T) {
			cfg := map[string]any{
				"mcpServers": map[string]any{"rec": map[string]any{"url": up.url()}},
				"data_dir":   data,
				"log_level":  "debug",
				"noa":        noaCfg,
			}
			config := writeConfigFile(t, filepath.Join(dir, "config-"+policy+".json"), cfg)
			base, _ := serveHTTP(t, config)
			// `mcproxy status` finds the proxy at the config's listen.
			cfg["listen"] = strings.TrimPrefix(base, "http://")
			statusConfig := writeConfigFile(t, filepath.Join(dir, "status-"+policy+".json"), cfg)
			c, _ := connectHTTP(t, base)
			id := c.GetSessionId()
			tag := strings.ToUpper(policy) + "X"
			logCall := func(msg string) *mcp.CallToolResult {
				t.Helper()
				return callTool(t, c, "call_tool", map[string]any{"name": "rec:log", "arguments": map[string]any{"message": msg}})
			}
			first := logCall(tag + "-FIRST")
			if first.IsError || refOf(first) == "" {
				t.Fatalf("the first call: got %q, want the result with its ref tag", text(first))
			}

			free := testenv.FillDisk(t, sessions)
			// Past the transcript's reserve (64 KiB of zeros written
			// ahead, which a full disk does not take away), and past
			// max_result_tokens, whose archived original cannot be
			// written either.
			big := prose(tag+"-BIG", 7, 25000)
			res := logCall(big)
			note := text(res)
			if policy == "refuse" {
				if !res.IsError || !strings.Contains(note, "refused before it ran") || !strings.Contains(note, `noa.on_record_error is "refuse"`) {
					t.Errorf("a call on a full disk with refuse: got %q (isError %v), want a refusal naming noa.on_record_error", note, res.IsError)
				}
				if seen.saw(tag + "-BIG") {
					t.Errorf("the refused call reached the upstream")
				}
			} else {
				if res.IsError || !strings.Contains(upstreamText(res), tag+"-BIG line 1:") {
					t.Errorf("a call on a full disk: got isError %v, want the upstream's result", res.IsError)
				}
				if !strings.Contains(note, "could not record it (no space left on device)") || !strings.Contains(note, "noa.on_record_error") ||
					!strings.Contains(note, "read_archive and Compress cannot cover it") {
					t.Errorf("a call on a full disk: want the not-recorded note naming the cause and noa.on_record_error; got the last block %q",
						note[max(0, len(note)-600):])
				}
				if refOf(res) != "" {
					t.Errorf("an unrecorded call got ref %s", refOf(res))
				}
				if !seen.saw(tag + "-BIG") {
					t.Errorf("the call never reached the upstream")
				}
			}
			// The failed write was cut back with the transcript's reserve,
			// whose space went back to the disk: take it too, so that from
			// here a record needing a page more does not fit (one of 8 KB).
			freeReserve := testenv.FillDisk(t, sessions)
			small := logCall(prose(tag+"-SMALL", 8, 1200))
			if policy == "refuse" {
				if !small.IsError || !strings.Contains(text(small), "refused before it ran") || seen.saw(tag+"-SMALL") {
					t.Errorf("a small call after the failure with refuse: got %q (isError %v, upstream saw it %v), want it refused before the upstream",
						text(small), small.IsError, seen.saw(tag+"-SMALL"))
				}
			} else if small.IsError || !strings.HasPrefix(text(small), tag+"-SMALL line 1:") || !strings.Contains(lastText(small), "could not record it") {
				t.Errorf("a small call after the failure: got %q, want its result and the note", text(small))
			}
			rec, listed := recordingOf(t, base, id)
			if !listed || rec == nil || rec.State != dashboard.RecordingFailing || !strings.Contains(rec.LastError, "no space left on device") || rec.Since.IsZero() {
				t.Errorf("/status of session %s on a full disk: listed %v, recording %+v; want failing with ENOSPC since a time", id, listed, rec)
			}

			if _, out, _ := runBinary(t, 60*time.Second, "status", "--config", statusConfig); !strings.Contains(out, "session "+id+" is not recording since") {
				t.Errorf("mcproxy status on a full disk: got\n%s\nwant the session named as not recording", out)
			}

			freeReserve()
			free()
			res = logCall(tag + "-AFTER")
			if res.IsError || refOf(res) == "" || strings.Contains(text(res), "[mcproxy]") {
				t.Errorf("a call once space is back: got %q, want the result with its ref tag and no note", text(res))
			}
			if rec, _ := recordingOf(t, base, id); rec != nil {
				t.Errorf("/status once a write succeeded again: got recording %+v, want none", rec)
			}
			code, show, errOut := runBinary(t, 60*time.Second, "sessions", "show", id, "--config", config)
			if code != 0 || !strings.Contains(show, "4 records") {
				t.Errorf("sessions show: exit %d, want 4 records (the calls before and after, each with its result):\n%s\n%s", code, show, errOut)
			}
			tr, err := os.ReadFile(filepath.Join(sessions, id, "transcript.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{tag + "-FIRST", tag + "-AFTER"} {
				if n := strings.Count(string(tr), m); n != 2 {
					t.Errorf("%s is %d times in the transcript, want its call and its result", m, n)
				}
			}
			if strings.Contains(string(tr), tag+"-BIG") || strings.Contains(string(tr), tag+"-SMALL") {
				t.Errorf("the transcript holds part of a call that was not recorded")
			}
		})
	}
}

// failingRecordings is the sessions /status lists as not recording.
func failingRecordings(t *testing.T, base string) []dashboard.Session {
	t.Helper()
	var out []dashboard.Session
	for _, s := range sessionsOf(t, base) {
		if s.Recording != nil {
			out = append(out, s)
		}
	}
	return out
}

// TestGatewayFullDisk is TestNoaFullDisk for the model-API gateway: a
// model request whose conversation cannot be recorded (its sessions on a
// full tmpfs) is forwarded as it came, with X-Mcproxy-Warning saying why
// ("report") or refused with a provider-style 503 that the model never
// sees ("refuse"); /status shows the conversation failing until a request
// is recorded again.
func TestGatewayFullDisk(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	sessions := filepath.Join(data, "sessions")
	testenv.Tmpfs(t, sessions, 1<<20)
	up := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("final answer") })
	defer up.Close()
	for _, pol := range recordPolicies {
		policy, name, noaCfg := pol.policy, pol.name, pol.noa()
		t.Run(name, func(t *testing.T) {
			config := writeConfigFile(t, filepath.Join(dir, "gw-config-"+policy+".json"), map[string]any{
				"mcpServers": map[string]any{},
				"data_dir":   data,
				"noa":        noaCfg,
				"gateway": map[string]any{"enabled": true,
					"anthropic": map[string]any{"base_url": up.URL},
					"models":    map[string]any{"disk-test-model": map[string]any{"context_window": config.MinContextWindow}}},
			})
			base, _ := serveHTTP(t, config)
			ask := func(question string) (*http.Response, []byte, []byte) {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"model": "disk-test-model", "max_tokens": 100,
					"messages": []any{map[string]any{"role": "user", "content": question}}})
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
				req.Header.Set("content-type", "application/json")
				req.Header.Set("x-api-key", "sk-disk")
				req.Header.Set("anthropic-version", "2023-06-01")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := readAll(resp)
				if err != nil {
					t.Fatal(err)
				}
				return resp, got, body
			}

			free := testenv.FillDisk(t, sessions)
			seen := len(up.Requests())
			resp, got, sent := ask("What is on a full disk, " + name + "?")
			if policy == "refuse" {
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(got), `noa.on_record_error is \"refuse\"`) ||
					!strings.Contains(string(got), `"type":"error"`) {
					t.Errorf("a request on a full disk with refuse: got %s %s, want a provider-style 503 naming noa.on_record_error", resp.Status, got)
				}
				if n := len(up.Requests()); n != seen {
					t.Errorf("the refused request reached the model (%d requests, want %d)", n, seen)
				}
			} else {
				warn := resp.Header.Get(gateway.HeaderWarning)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), "final answer") {
					t.Errorf("a request on a full disk: got %s %s, want the model's answer", resp.Status, got)
				}
				if !strings.Contains(warn, "no space left on device") || !strings.Contains(warn, "noa.on_record_error") {
					t.Errorf("%s: got %q, want why the conversation was not recorded and the key", gateway.HeaderWarning, warn)
				}
				if reqs := up.Requests(); len(reqs) != seen+1 || !bytes.Equal(reqs[len(reqs)-1].Body, sent) {
					t.Errorf("the model got %d requests, want one: the client's, forwarded as it came", len(reqs)-seen)
				}
			}
			if f := failingRecordings(t, base); len(f) != 1 || !strings.Contains(f[0].Recording.LastError, "no space left on device") {
				t.Errorf("/status on a full disk: got %+v, want the one conversation failing with ENOSPC", f)
			}

			free()
			resp, got, _ = ask("And once there is room, " + name + "?")
			if resp.StatusCode != http.StatusOK || resp.Header.Get(gateway.HeaderWarning) != "" || !strings.Contains(string(got), "final answer") {
				t.Errorf("a request once space is back: got %s %s (warning %q), want the answer and no warning", resp.Status, got, resp.Header.Get(gateway.HeaderWarning))
			}
			if f := failingRecordings(t, base); len(f) != 0 {
				t.Errorf("/status once recording works again: got %+v failing, want none", f)
			}
		})
	}
}
