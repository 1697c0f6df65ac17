package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

func TestRunUsage(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{nil, exitUsage, "", "Usage:"},
		{[]string{"help"}, exitOK, "Usage:", ""},
		{[]string{"--help"}, exitOK, "Usage:", ""},
		{[]string{"version"}, exitOK, "mcproxy ", ""},
		{[]string{"bench", "help"}, exitOK, "usage: mcproxy bench", ""},
		{[]string{"embeddings", "help"}, exitOK, "usage: mcproxy embeddings build", ""},
		{[]string{"embeddings", "nope"}, exitUsage, "", "unknown subcommand"},
		{[]string{"nope"}, exitUsage, "", `unknown command "nope"`},
		{[]string{"search"}, exitUsage, "", "give a query"},
		{[]string{"search", "x", "--limit", "99"}, exitUsage, "", "--limit must be 1 to 50"},
		{[]string{"serve", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"serve", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"sessions"}, exitUsage, "", "mcproxy sessions show ID"},
		{[]string{"sessions", "help"}, exitOK, "mcproxy sessions archive ID BLOCK", ""},
		{[]string{"sessions", "frob"}, exitUsage, "", `unknown subcommand "frob"`},
		{[]string{"sessions", "show"}, exitUsage, "", "want ID, got 0 argument(s)"},
		{[]string{"sessions", "archive", "s1"}, exitUsage, "", "want ID BLOCK, got 1 argument(s)"},
		{[]string{"sessions", "list", "extra"}, exitUsage, "", "takes no arguments"},
		{[]string{"sessions", "list", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if tc.wantStdout != "" && !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout: got %q, want it to contain %q", stdout.String(), tc.wantStdout)
			}
			if tc.wantStdout == "" && stdout.Len() != 0 {
				t.Errorf("stdout: got %q, want nothing", stdout.String())
			}
			if tc.wantStderr != "" && !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args      []string
		wantPos   []string
		wantLimit int
	}{
		{[]string{"q"}, []string{"q"}, 0},
		{[]string{"q", "--limit", "3"}, []string{"q"}, 3},
		{[]string{"--limit", "3", "q"}, []string{"q"}, 3},
		{[]string{"read", "--limit=2", "file"}, []string{"read", "file"}, 2},
		{[]string{"--", "--limit"}, []string{"--limit"}, 0},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "")
		got, err := parseInterleaved(fs, tc.args)
		if err != nil {
			t.Errorf("parseInterleaved(%q): %v", tc.args, err)
			continue
		}
		if !cmp.Equal(got, tc.wantPos) || *limit != tc.wantLimit {
			t.Errorf("parseInterleaved(%q): got %q limit %d, want %q limit %d", tc.args, got, *limit, tc.wantPos, tc.wantLimit)
		}
	}
}

// lockedBuffer collects stderr written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeStdioKeepsStdoutClean runs `serve --stdio` in-process with a real
// upstream that writes to its stderr and debug logging on: every byte on
// stdout must be a JSON-RPC message, and closing stdin ends the process
// cleanly.
func TestServeStdioKeepsStdoutClean(t *testing.T) {
	fsServer := testenv.NodeBin(t, "mcp-server-filesystem")
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"filesystem": map[string]any{"command": fsServer, "args": []string{dir}}},
		"data_dir":   filepath.Join(dir, "data"),
		"log_level":  "debug",
	})
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codec := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"serve", "--stdio", "--config", config}, stdinR, stdoutW, stderr)
		stdoutW.Close()
		codec <- code
	}()

	// Tee stdout: the client reads it, and every line is checked.
	clientR, clientW := io.Pipe()
	var lines []string
	linesDone := make(chan struct{})
	go func() {
		defer close(linesDone)
		defer clientW.Close()
		sc := bufio.NewScanner(stdoutR)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if _, err := clientW.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
	}()

	c := client.NewClient(transport.NewIO(clientR, stdinW, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithTimeout(ctx, 60*time.Second)
	defer icancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "cmd-test", Version: "0"}
	if _, err := c.Initialize(ictx, init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, stderr.String())
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "retrieve_tools"
	req.Params.Arguments = map[string]any{"query": "list the files in a directory"}
	// The first answer comes within the start grace (2 s) with what is
	// ready; on a loaded machine node may not be up by then, and the answer
	// says so. A model would ask again; so does the test, while it says so.
	var got string
	for {
		res, err := c.CallTool(ictx, req)
		if err != nil || res.IsError {
			t.Fatalf("retrieve_tools: %v %+v", err, res)
		}
		got = res.Content[0].(mcp.TextContent).Text
		waiting := strings.Contains(got, "Not connected right now: filesystem (") || strings.Contains(got, "Still indexing: filesystem (")
		if !waiting || ictx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(got, "filesystem:list_directory") {
		t.Errorf("retrieve_tools: got %q, want filesystem:list_directory among the matches", got)
	}

	// Closing stdin is how a client ends a stdio server.
	stdinW.Close()
	select {
	case code := <-codec:
		if code != exitOK {
			t.Errorf("exit code after stdin closed: got %d, want 0\nstderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve --stdio did not exit within 30s of stdin closing\nstderr:\n%s", stderr.String())
	}
	<-linesDone
	c.Close()

	if len(lines) < 2 {
		t.Fatalf("stdout: got %d lines, want at least the initialize and tools/call responses", len(lines))
	}
	for _, l := range lines {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC message: %q", l)
		}
	}
	if !strings.Contains(stderr.String(), "mcproxy ready") || !strings.Contains(stderr.String(), `"upstream": "filesystem"`) {
		t.Errorf("stderr: got %q, want the logs there", stderr.String())
	}
}

// TestExampleConfigNoaDefaults checks that the noa section of
// configs/example.json spells out exactly the defaults a config without one
// gets, so a user editing it starts from what mcproxy really runs.
func TestExampleConfigNoaDefaults(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg, err := config.Load(filepath.Join("..", "..", "configs", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := config.Parse([]byte(`{"mcpServers": {}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Noa.IsEnabled() || cfg.Noa.MaxResultTokens != bare.Noa.MaxResultTokens || cfg.Noa.ContextLimit != bare.Noa.ContextLimit || cfg.Tokenizer != bare.Tokenizer {
		t.Errorf("example: enabled %v, context_limit %d, max_result_tokens %d, tokenizer %q; want true, %d, %d, %q",
			cfg.Noa.IsEnabled(), cfg.Noa.ContextLimit, cfg.Noa.MaxResultTokens, cfg.Tokenizer, bare.Noa.ContextLimit, bare.Noa.MaxResultTokens, bare.Tokenizer)
	}
	got, warnings := session.EngineConfig(cfg.Noa)
	want, _ := session.EngineConfig(bare.Noa)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example's noa section differs from the defaults (-default +example):\n%s", diff)
	}
	if len(warnings) != 0 {
		t.Errorf("example's noa section: got warnings %q, want none", warnings)
	}
}
