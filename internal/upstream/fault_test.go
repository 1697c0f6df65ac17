//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestPeerPagesAndRawSchema checks that every tools/list page is read and
// that schemas come through byte for byte.
func TestPeerPagesAndRawSchema(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{})

	var want []string
	for _, n := range peerToolNames {
		want = append(want, "p:"+n)
	}
	if diff := cmp.Diff(want, toolNames(m.Tools())); diff != "" {
		t.Errorf("tools across pages (-want +got):\n%s", diff)
	}
	tool, ok := m.MCPTool("p", "raw")
	if !ok {
		t.Fatal("MCPTool(p, raw) not found")
	}
	if got := string(tool.RawInputSchema); got != rawSchema {
		t.Errorf("got raw input schema\n%s\nwant it verbatim\n%s", got, rawSchema)
	}
	if got := string(ToolFromMCP("p", tool).Schema); got != rawSchema {
		t.Errorf("got ToolFromMCP schema %s, want %s", got, rawSchema)
	}
	// The tool re-encodes with the upstream's schema, for direct mode.
	b, err := json.Marshal(tool)
	if err != nil || !strings.Contains(string(b), rawSchema) {
		t.Errorf("got marshalled tool %s (%v), want it to carry the raw schema", b, err)
	}
	// A failing tool is a result with IsError, not a Go error.
	if res := call(t, m, "p", "raw", nil); !res.IsError || text(res) != "raw always fails" {
		t.Errorf("got result %+v, want an IsError result", res)
	}
}

// TestFilteringAndLookupErrors covers allowed/disabled tools, disabled
// servers and unknown names.
func TestFilteringAndLookupErrors(t *testing.T) {
	allowed, _ := peerServer(t, "peer")
	allowed.AllowedTools = []string{"echo", "sleep", "raw"}
	allowed.DisabledTools = []string{"raw"}
	off, _ := peerServer(t, "peer")
	no := false
	off.Enabled = &no
	m := startManager(t, map[string]config.ServerConfig{"p": allowed, "off": off}, Options{})

	if diff := cmp.Diff([]string{"p:echo", "p:sleep"}, toolNames(m.Tools())); diff != "" {
		t.Errorf("filtered tools (-want +got):\n%s", diff)
	}
	if _, ok := m.MCPTool("p", "raw"); ok {
		t.Error("MCPTool(p, raw) found a disabled tool")
	}
	ctx := context.Background()
	if _, err := m.Call(ctx, "p", "raw", nil); !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), "disabled_tools") {
		t.Errorf("got %v calling a disabled tool, want ErrUnknownTool naming disabled_tools", err)
	}
	if _, err := m.Call(ctx, "p", "nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("got %v calling a missing tool, want ErrUnknownTool", err)
	}
	if _, err := m.Call(ctx, "nope", "echo", nil); !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), "off, p") {
		t.Errorf("got %v, want ErrUnknownServer listing the configured servers", err)
	}
	var down *DownError
	if _, err := m.Call(ctx, "off", "echo", nil); !errors.As(err, &down) || down.State != StateDisabled {
		t.Errorf("got %v calling a disabled server, want a *DownError in state disabled", err)
	} else if !strings.Contains(err.Error(), "mcpServers.off.enabled") {
		t.Errorf("got %q, want the message to name the setting", err)
	}
	want := []Status{
		{Server: "off", Transport: "stdio", State: StateDisabled},
		{Server: "p", Transport: "stdio", State: StateReady, Tools: 2},
	}
	got := m.Status()
	// Since is a clock reading: the disabled server never started, the
	// ready one became ready during this test.
	if len(got) == 2 && (!got[0].Since.IsZero() || got[1].Since.IsZero() || time.Since(got[1].Since) > time.Minute) {
		t.Errorf("since: got %v and %v, want zero for the disabled server and a moment ago for the ready one", got[0].Since, got[1].Since)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Status{}, "Since")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// TestInitTimeoutDoesNotBlockStart: a server that never answers initialize
// fails with a timeout naming its limit while the others come up.
func TestInitTimeoutDoesNotBlockStart(t *testing.T) {
	hang, _ := peerServer(t, "hang")
	hang.InitTimeout = config.Duration(300 * time.Millisecond)
	good, _ := peerServer(t, "peer")
	m := startManager(t, map[string]config.ServerConfig{"hang": hang, "good": good},
		Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})

	st := statusOf(t, m, "hang")
	if st.State != StateDown || !strings.Contains(st.LastError, "timed out after 300ms") ||
		!strings.Contains(st.LastError, "mcpServers.hang.init_timeout") {
		t.Errorf("got hang status %+v, want down with an init timeout naming mcpServers.hang.init_timeout", st)
	}
	if st.RetryAt.IsZero() {
		t.Errorf("got no RetryAt for a down server")
	}
	if got := text(call(t, m, "good", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("got %q from the good server, want %q", got, "echo: hi")
	}
	// Within the backoff a call fails at once, saying when to retry.
	_, err := m.Call(context.Background(), "hang", "echo", nil)
	var down *DownError
	if !errors.As(err, &down) {
		t.Fatalf("got %v, want a *DownError", err)
	}
	if down.Server != "hang" || down.State != StateDown || !down.RetryAt.Equal(st.RetryAt) ||
		!strings.Contains(err.Error(), `upstream "hang" is down`) || !strings.Contains(err.Error(), "next reconnect attempt") {
		t.Errorf("got %#v (%q), want hang down with its retry time", down, err)
	}
}

// TestCallTimeout: a call past call_timeout fails with an error naming the
// limit, and the upstream is told to stop.
func TestCallTimeout(t *testing.T) {
	sc, dir := peerServer(t, "peer")
	sc.CallTimeout = config.Duration(300 * time.Millisecond)
	m := startManager(t, map[string]config.ServerConfig{"slow": sc}, Options{})

	_, err := m.Call(context.Background(), "slow", "sleep", map[string]any{"ms": 60000})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *TimeoutError", err)
	}
	want := TimeoutError{Server: "slow", Tool: "sleep", Limit: 300 * time.Millisecond, Setting: "mcpServers.slow.call_timeout"}
	if diff := cmp.Diff(want, *te); diff != "" {
		t.Errorf("timeout error (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "300ms") || !strings.Contains(err.Error(), "mcpServers.slow.call_timeout") {
		t.Errorf("got %q, want the limit and its setting named", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got errors.Is(err, DeadlineExceeded) false")
	}
	waitUntil(t, 10*time.Second, "the upstream to see the cancellation", func() bool {
		_, err := os.Stat(filepath.Join(dir, "cancelled"))
		return err == nil
	})
	// The session is still good.
	if got := text(call(t, m, "slow", "echo", map[string]any{"text": "after"})); got != "echo: after" {
		t.Errorf("got %q after the timeout, want %q", got, "echo: after")
	}
}

// TestTimeoutSettingNames checks which setting a timeout is attributed to.
func TestTimeoutSettingNames(t *testing.T) {
	cases := []struct {
		name     string
		own, top config.Duration
		want     limit
	}{
		{"server", config.Duration(time.Second), config.Duration(time.Minute), limit{time.Second, "mcpServers.git.call_timeout"}},
		{"top", 0, config.Duration(time.Minute), limit{time.Minute, "call_timeout"}},
		{"default", 0, 0, limit{config.DefaultCallTimeout, "the default call_timeout (set call_timeout or mcpServers.git.call_timeout to change it)"}},
		// After config.ApplyDefaults, nothing set: the server holds the
		// top-level value, which holds the default.
		{"defaults applied", config.Duration(config.DefaultCallTimeout), config.Duration(config.DefaultCallTimeout),
			limit{config.DefaultCallTimeout, "the default call_timeout (set call_timeout or mcpServers.git.call_timeout to change it)"}},
		{"top-level inherited", config.Duration(time.Minute), config.Duration(time.Minute), limit{time.Minute, "call_timeout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveLimit("git", tc.own, tc.top, "call_timeout", config.DefaultCallTimeout)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCancellationReachesStdioUpstream: cancelling the caller's context
// sends notifications/cancelled, which ends the upstream handler.
func TestCancellationReachesStdioUpstream(t *testing.T) {
	sc, dir := peerServer(t, "peer")
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{})
	cancelMidCall(t, m, dir, map[string]any{"ms": 60000})
	// The child's stdin is still open (the handler was ended by the
	// notification, not by shutdown): the same session keeps answering.
	pid := childPID(t, m, "p")
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "still here"})); got != "echo: still here" {
		t.Errorf("got %q, want %q", got, "echo: still here")
	}
	if got := childPID(t, m, "p"); got != pid {
		t.Errorf("got child %d, want the same child %d", got, pid)
	}
}

// cancelMidCall calls the peer's sleep tool on server "p" with args,
// cancels the call once the upstream handler has started, and checks the
// caller gets context.Canceled and the handler was cancelled
// (dir/cancelled).
func cancelMidCall(t *testing.T, m *Manager, dir string, args map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "p", "sleep", args)
		done <- err
	}()
	waitUntil(t, 10*time.Second, "the sleep call to start upstream", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	waitUntil(t, 10*time.Second, "the upstream handler to be cancelled", func() bool {
		_, err := os.Stat(filepath.Join(dir, "cancelled"))
		return err == nil
	})
}

// TestListChanged: an upstream that adds a tool and sends list_changed is
// re-listed and reported through OnToolsChanged.
func TestListChanged(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	changes := make(chan []config.Tool, 10)
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{
		OnToolsChanged: func(server string, tools []config.Tool) { changes <- tools },
	})
	if first := <-changes; len(first) != len(peerToolNames) {
		t.Fatalf("got first tool set %v, want %d tools", toolNames(first), len(peerToolNames))
	}
	call(t, m, "p", "add_tool", map[string]any{"name": "fresh"})
	select {
	case tools := <-changes:
		if !containsID(tools, "p:fresh") || len(tools) != len(peerToolNames)+1 {
			t.Errorf("got %v, want the old tools plus p:fresh", toolNames(tools))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("OnToolsChanged was not called after list_changed")
	}
	if !containsID(m.Tools(), "p:fresh") {
		t.Errorf("got Tools %v, want p:fresh", toolNames(m.Tools()))
	}
	if got := text(call(t, m, "p", "fresh", nil)); got != "fresh" {
		t.Errorf("got %q calling the new tool, want %q", got, "fresh")
	}
	if got := statusOf(t, m, "p").Tools; got != len(peerToolNames)+1 {
		t.Errorf("got %d tools in status, want %d", got, len(peerToolNames)+1)
	}
}

func containsID(tools []config.Tool, id string) bool {
	for _, t := range tools {
		if t.ID == id {
			return true
		}
	}
	return false
}

// TestCrashAndRecovery kills an upstream child mid-call: that call fails
// with a clear error, the other server keeps working, and the crashed one
// comes back after the backoff.
func TestCrashAndRecovery(t *testing.T) {
	p, dir := peerServer(t, "peer")
	other, _ := peerServer(t, "peer")
	changes := make(chan string, 10)
	const backoffTime = 3 * time.Second
	m := startManager(t, map[string]config.ServerConfig{"p": p, "other": other}, Options{
		MinBackoff: backoffTime, MaxBackoff: backoffTime,
		OnToolsChanged: func(server string, tools []config.Tool) {
			if server == "p" {
				changes <- map[bool]string{true: "down", false: "up"}[tools == nil]
			}
		},
	})
	if got := <-changes; got != "up" {
		t.Fatalf("got %s, want up", got)
	}
	pid := childPID(t, m, "p")

	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "p", "sleep", map[string]any{"ms": 60000})
		done <- err
	}()
	waitUntil(t, 10*time.Second, "the sleep call to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var down *DownError
	if !errors.As(err, &down) || down.Server != "p" || !strings.Contains(down.LastError, "signal: killed") {
		t.Fatalf("got %v, want a *DownError for p saying the process was killed", err)
	}
	if got := <-changes; got != "down" {
		t.Errorf("got %s, want OnToolsChanged(p, nil)", got)
	}
	// Right after the crash the backoff holds: calls fail fast.
	if _, err := m.Call(context.Background(), "p", "echo", map[string]any{"text": "x"}); !errors.As(err, &down) {
		t.Errorf("got %v during the backoff, want a *DownError", err)
	}
	if containsID(m.Tools(), "p:echo") {
		t.Error("Tools still lists the crashed server's tools")
	}
	if got := text(call(t, m, "other", "echo", map[string]any{"text": "fine"})); got != "echo: fine" {
		t.Errorf("got %q from the other server, want %q", got, "echo: fine")
	}

	select {
	case got := <-changes:
		if got != "up" {
			t.Fatalf("got %s, want up", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("p did not come back; status %+v", statusOf(t, m, "p"))
	}
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "back"})); got != "echo: back" {
		t.Errorf("got %q after recovery, want %q", got, "echo: back")
	}
	if got := childPID(t, m, "p"); got == pid {
		t.Errorf("got the old child %d after recovery, want a new one", got)
	}
	if st := statusOf(t, m, "p"); st.State != StateReady || st.LastError != "" || !st.RetryAt.IsZero() {
		t.Errorf("got %+v after recovery, want ready with no error", st)
	}
}

// TestCrashOnStartExplainsItself: a child that exits at once is reported
// with its exit status and last stderr line.
func TestCrashOnStartExplainsItself(t *testing.T) {
	sc, _ := peerServer(t, "crash")
	m := startManager(t, map[string]config.ServerConfig{"c": sc}, Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	st := statusOf(t, m, "c")
	if st.State != StateDown || !strings.Contains(st.LastError, "exit status 3") ||
		!strings.Contains(st.LastError, "cannot open database") {
		t.Errorf("got %+v, want down with the exit status and stderr", st)
	}
}

// TestMissingCommand: a command that cannot start is reported, and does
// not hold up the other servers.
func TestMissingCommand(t *testing.T) {
	good, _ := peerServer(t, "peer")
	missing := filepath.Join(t.TempDir(), "no-such-server")
	m := startManager(t, map[string]config.ServerConfig{"good": good, "gone": {Command: missing}},
		Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	st := statusOf(t, m, "gone")
	if st.State != StateDown || !strings.Contains(st.LastError, missing) || !strings.Contains(st.LastError, "no such file") {
		t.Errorf("got %+v, want down naming the missing command", st)
	}
	if st := statusOf(t, m, "good"); st.State != StateReady {
		t.Errorf("got %+v, want the other server ready", st)
	}
}

// TestOnDemandReconnect: a call to a down server whose next retry is far
// off reconnects right away once MinBackoff has passed.
func TestOnDemandReconnect(t *testing.T) {
	sc, dir := peerServer(t, "flaky")
	const minBackoff = 200 * time.Millisecond
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{MinBackoff: minBackoff, MaxBackoff: time.Hour})
	// Let the failures push the retry well past MinBackoff.
	waitUntil(t, 30*time.Second, "the backoff to grow", func() bool {
		st := statusOf(t, m, "p")
		return st.State == StateDown && time.Until(st.RetryAt) > 2*time.Second
	})
	retryAt := statusOf(t, m, "p").RetryAt
	// Fix the server: its next start serves normally.
	if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Calls within MinBackoff of the last failure get a DownError; the
	// first one after it reconnects on the spot.
	var res *mcp.CallToolResult
	waitUntil(t, 10*time.Second, "an on-demand reconnect", func() bool {
		var err error
		res, err = m.Call(context.Background(), "p", "echo", map[string]any{"text": "now"})
		var down *DownError
		if err != nil && !errors.As(err, &down) {
			t.Fatalf("got %v, want success or a *DownError", err)
		}
		return err == nil
	})
	if got := text(res); got != "echo: now" {
		t.Errorf("got %q, want %q", got, "echo: now")
	}
	if !time.Now().Before(retryAt) {
		t.Errorf("the call waited for the scheduled retry at %s instead of reconnecting on demand", retryAt)
	}
}

// TestStagedStop: a child that ignores stdin close and SIGTERM is killed,
// and a well-behaved one exits at the first stage.
func TestStagedStop(t *testing.T) {
	cases := []struct {
		mode                 string
		stopGrace, termGrace time.Duration
		wantStages           []string
	}{
		{"stubborn", 200 * time.Millisecond, 200 * time.Millisecond,
			[]string{"child ignored stdin close; sending SIGTERM", "child ignored SIGTERM; killing it"}},
		// A generous grace: the child exits on EOF long before it runs out.
		{"peer", time.Minute, time.Minute, nil},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			log, logs := observed()
			sc, _ := peerServer(t, tc.mode)
			m := New(&config.Config{MCPServers: map[string]config.ServerConfig{"p": sc}},
				Options{Logger: log, StopGrace: tc.stopGrace, TermGrace: tc.termGrace})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m.Start(ctx)
			if st := statusOf(t, m, "p"); st.State != StateReady {
				t.Fatalf("got %+v, want ready", st)
			}
			pid := childPID(t, m, "p")
			closeAndCheck(t, m)
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("got kill(%d, 0) = %v after Close, want ESRCH", pid, err)
			}
			var got []string
			for _, e := range logs.All() {
				if strings.Contains(e.Message, "SIGTERM") || strings.Contains(e.Message, "killing") {
					got = append(got, e.Message)
				}
			}
			if diff := cmp.Diff(tc.wantStages, got); diff != "" {
				t.Errorf("stop stages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStderrEnvCwdAndSecrets: the child gets the configured env over ours
// and its cwd; its stderr is logged line by line under its name; env values
// never reach the log.
func TestStderrEnvCwdAndSecrets(t *testing.T) {
	log, logs := observed()
	sc, _ := peerServer(t, "peer")
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sc.Cwd = cwd
	sc.Env["PEER_SECRET"] = "s3cr3t-value"
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{Logger: log})

	var who map[string]string
	if err := json.Unmarshal([]byte(text(call(t, m, "p", "whoami", nil))), &who); err != nil {
		t.Fatal(err)
	}
	if who["cwd"] != cwd || who["secret"] != "s3cr3t-value" || who["home"] != os.Getenv("HOME") {
		t.Errorf("got %v, want cwd %s, the configured secret and our HOME inherited", who, cwd)
	}
	pid := childPID(t, m, "p")
	waitUntil(t, 10*time.Second, "the child's stderr in the log", func() bool {
		var got []string
		for _, e := range logs.FilterField(zap.String("upstream", "p")).FilterField(zap.String("stream", "stderr")).All() {
			got = append(got, e.Message)
		}
		return cmp.Equal(got, []string{"peer peer starting", "pid " + strconv.Itoa(pid)})
	})
	for _, e := range logs.All() {
		b, _ := json.Marshal(e.ContextMap())
		if strings.Contains(e.Message+string(b), "s3cr3t-value") {
			t.Errorf("a log entry carries the secret: %s %s", e.Message, b)
		}
	}
}
