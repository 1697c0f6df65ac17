package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// sessionsFixture is a config file whose data directory has no sessions
// yet, and the options serve would run its session hosts with.
type sessionsFixture struct {
	dir, config string
	opts        session.Options
}

func newSessionsFixture(t *testing.T) *sessionsFixture {
	t.Helper()
	dir := t.TempDir()
	f := &sessionsFixture{dir: dir, config: filepath.Join(dir, "config.json")}
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{}, "data_dir": filepath.Join(dir, "data"), "noa": map[string]any{"context_limit": 20000}})
	if err := os.WriteFile(f.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(f.config, func(*config.Config) {})
	if err != nil {
		t.Fatal(err)
	}
	if f.opts, _, err = sessionOptions(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs `mcproxy ARGS --config F`, failing the test unless it succeeds,
// and returns its stdout.
func (f *sessionsFixture) run(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(args, "--config", f.config), strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
	}
	return stdout.String()
}

// recordRead records a tools/call of fs:read and its text result in h, as
// the MCP front does.
func recordRead(t *testing.T, h *session.Host, path, text string) {
	t.Helper()
	ctx := context.Background()
	rec, err := h.Record(ctx, session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "fs:read", Text: fmt.Sprintf(`{"path":%q}`, path)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Turn(ctx, session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "fs:read", ToolCallID: rec[0].ToolCallID, Text: text}}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionsCommand runs `mcproxy sessions` on a data directory with no
// sessions and with one written by a real host.
func TestSessionsCommand(t *testing.T) {
	f := newSessionsFixture(t)
	if got := f.run(t, "sessions", "list"); !strings.HasPrefix(got, "no sessions in "+filepath.Join(f.dir, "data", "sessions")) {
		t.Errorf("list with no sessions: got %q", got)
	}

	// One session, written the way serve writes it.
	h, err := session.Open(f.opts, "s-1")
	if err != nil {
		t.Fatal(err)
	}
	recordRead(t, h, "/a", "the original text")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.run(t, "sessions", "list"); !strings.Contains(got, "s-1") {
		t.Errorf("list: got %q, want the session s-1", got)
	}
	if got := f.run(t, "sessions", "show", "s-1"); !strings.Contains(got, "state.json  current") || !strings.Contains(got, "no blocks yet") {
		t.Errorf("show: got %q, want a current state and no blocks", got)
	}
	if got := f.run(t, "sessions", "archive", "s-1", "m00002"); got != "the original text" {
		t.Errorf("archive m00002: got %q, want the result verbatim", got)
	}
	if got := f.run(t, "sessions", "rebuild", "s-1"); !strings.Contains(got, "state.json now: current") {
		t.Errorf("rebuild: got %q", got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "show", "nope"}, `no session "nope"`},
		{[]string{"sessions", "show", "../etc"}, `invalid session id "../etc"`},
		{[]string{"sessions", "archive", "s-1", "b7"}, `no block "b7"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(tc.args, "--config", f.config), strings.NewReader(""), &stdout, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d, nothing on stdout and %q", tc.args, code, stdout.String(), stderr.String(), exitError, tc.want)
		}
	}
}

// TestSessionsShowsBlocks runs `mcproxy sessions list|show|rebuild` on a
// session with tier-1 blocks and a tier-2 block absorbing them, written by
// a real host the way serve writes it.
func TestSessionsShowsBlocks(t *testing.T) {
	f := newSessionsFixture(t)
	h, err := session.Open(f.opts, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 {
		recordRead(t, h, fmt.Sprintf("/f%d", i), strings.Repeat(fmt.Sprintf("line %d of file %d: alpha bravo charlie delta echo foxtrot\n", i, i), 60))
	}
	summary := "Read the files; every line names its file and number, followed by the same six words. Nothing else is in them."
	compress := func(ranges ...[2]string) {
		t.Helper()
		var items []map[string]string
		for _, r := range ranges {
			items = append(items, map[string]string{"start": r[0], "end": r[1], "summary": summary, "topic": "file reads"})
		}
		args, _ := json.Marshal(map[string]any{"content": items})
		p, err := h.Compress(context.Background(), args)
		if err != nil || p.IsError {
			t.Fatalf("Compress %v: %v\n%s", ranges, err, p.Text)
		}
	}
	compress([2]string{"m00001", "m00008"}, [2]string{"m00009", "m00016"})
	compress([2]string{"b1", "b2"})
	st := h.State()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if len(st.Blocks) != 3 || st.Blocks[2].Tier != 2 {
		t.Fatalf("fixture: got %d blocks (last of tier %d), want b1, b2 and a tier-2 b3", len(st.Blocks), st.Blocks[len(st.Blocks)-1].Tier)
	}

	list := f.run(t, "sessions", "list")
	for _, want := range []string{"SESSION", "LAST ACTIVE (UTC)", "TOKENS SAVED", "TRANSCRIPT"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
	if row := regexp.MustCompile(`alpha\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d+\s+1 active / 3\s+\S+\s+[0-9.]+ KiB`); !row.MatchString(list) {
		t.Errorf("list row for alpha does not show 1 active of 3 blocks and the transcript's size:\n%s", list)
	}
	show := f.run(t, "sessions", "show", "alpha")
	archive := filepath.Join(f.opts.Dir, "alpha", session.ArchiveDir)
	for _, want := range []string{"state.json  current", "BLOCK", "TIER", "absorbed by b3", "T2", "1 active, 2 absorbed into higher tiers; T2: 1",
		filepath.Join(archive, "tier1"), filepath.Join(archive, "tier2"), "2 Compress call(s) applied"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	for _, b := range st.Blocks {
		if !strings.Contains(show, b.BlockID+"  ") {
			t.Errorf("show does not list block %s", b.BlockID)
		}
	}
	if strings.Contains(show, "MISSING") {
		t.Errorf("show reports a missing archive:\n%s", show)
	}

	// Lose state.json and one archive; rebuild restores both and says so.
	lost := st.Blocks[0]
	if err := os.Remove(filepath.Join(f.opts.Dir, "alpha", session.StateFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lost.ArchivePath); err != nil {
		t.Fatal(err)
	}
	if show := f.run(t, "sessions", "show", "alpha"); !regexp.MustCompile(`(?m)^state\.json\s+missing`).MatchString(show) {
		t.Errorf("show after the loss does not report state.json missing:\n%s", show)
	}
	rebuilt := f.run(t, "sessions", "rebuild", "alpha")
	for _, want := range []string{"session alpha: rebuilt from", "Compress calls replayed: 2, skipped", "blocks: 3", "state.json before: missing",
		"state.json now: current", "recreated missing archive " + lost.ArchiveRel} {
		if !strings.Contains(rebuilt, want) {
			t.Errorf("rebuild output lacks %q:\n%s", want, rebuilt)
		}
	}
}

// TestSessionsPrune runs `mcproxy sessions prune` and checks `list` shows
// each session's size and the total.
func TestSessionsPrune(t *testing.T) {
	f := newSessionsFixture(t)
	for _, id := range []string{"old-1", "new-1"} {
		h, err := session.Open(f.opts, id)
		if err != nil {
			t.Fatal(err)
		}
		recordRead(t, h, "/a", strings.Repeat("text ", 200))
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	dir := filepath.Join(f.opts.Dir, "old-1")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.Chtimes(filepath.Join(dir, e.Name()), old, old)
	}
	os.Chtimes(dir, old, old)

	list := f.run(t, "sessions", "list")
	if !strings.Contains(list, "SIZE") || !regexp.MustCompile(`2 session\(s\), [0-9.]+ (B|KiB) in `).MatchString(list) {
		t.Errorf("list: got %q, want a SIZE column and a total for 2 sessions", list)
	}
	if got := f.run(t, "sessions", "prune", "--dry-run"); !strings.Contains(got, "would remove old-1") || strings.Contains(got, "new-1") ||
		!strings.Contains(got, "untouched for 30 days or longer") {
		t.Errorf("prune --dry-run: got %q, want old-1 listed, new-1 not, and the default retention as 30 days", got)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the dry run removed old-1: %v", err)
	}
	if got := f.run(t, "sessions", "prune", "--older-than", "45d"); !strings.Contains(got, "removed 0 session(s)") || !strings.Contains(got, "for 45 days or") {
		t.Errorf("prune --older-than 45d: got %q, want nothing removed", got)
	}
	if got := f.run(t, "sessions", "prune"); !strings.Contains(got, "removed old-1") || !strings.Contains(got, "removed 1 session(s)") {
		t.Errorf("prune: got %q, want old-1 removed", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("old-1 still there after prune: %v", err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sessions", "prune", "--older-than", "soon", "--config", f.config}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), `--older-than: invalid retention "soon"`) {
		t.Errorf("prune --older-than soon: exit %d, stderr %q", code, stderr.String())
	}
}
