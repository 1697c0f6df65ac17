package e2e

import (
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

	"github.com/mcproxy/mcproxy/internal/dashboard"
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

// recordingOf is /status's recording of session id: nil when recording
// works, and when the session is not listed (listed reports which).
func recordingOf(t *testing.T, base, id string) (rec *dashboard.Recording, listed bool) {
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
	for _, s := range st.Sessions {
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

	for _, policy := range []string{"", "refuse"} {
		name := policy
		if name == "" {
			name = "report (default)"
		}
		t.Run(name, func(t *testing.T) {
			noaCfg := map[string]any{}
			if policy != "" {
				noaCfg["on_record_error"] = policy
			}
			config := writeConfigFile(t, filepath.Join(dir, "config-"+policy+".json"), map[string]any{
				"mcpServers": map[string]any{"rec": map[string]any{"url": up.url()}},
				"data_dir":   data,
				"log_level":  "debug",
				"noa":        noaCfg,
			})
			base, _ := serveHTTP(t, config)
			c, _ := connectHTTP(t, base)
			id := c.GetSessionId()
			tag := strings.ToUpper(policy) + "X"
			logCall := func(msg string) *mcp.CallToolResult {
				t.Helper()
				return callTool(t, c, "call_tool", map[string]any{"name": "rec:log", "arguments": map[string]any{"message": msg}})
			}
			if res := logCall(tag + "-FIRST"); res.IsError || refOf(res) == "" {
				t.Fatalf("the first call: got %q, want the result with its ref tag", text(res))
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
			rec, listed := recordingOf(t, base, id)
			if !listed || rec == nil || rec.State != dashboard.RecordingFailing || !strings.Contains(rec.LastError, "no space left on device") || rec.Since.IsZero() {
				t.Errorf("/status of session %s on a full disk: listed %v, recording %+v; want failing with ENOSPC since a time", id, listed, rec)
			}

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
			if strings.Contains(string(tr), tag+"-BIG") {
				t.Errorf("the transcript holds part of the call that was not recorded")
			}
		})
	}
}
