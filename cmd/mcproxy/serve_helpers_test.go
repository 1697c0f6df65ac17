package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// served is an in-process `mcproxy serve` over HTTP.
type served struct {
	base   string // http://127.0.0.1:PORT
	config string // the config file's path
	stderr *lockedBuffer
}

// writeJSON writes v as the file at path.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Write then rename, as an editor saves.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startServe runs `mcproxy serve` on a free loopback port with cfg (its
// listen and data_dir are filled in) and waits until it answers HTTP. The
// test stops it and checks it exits cleanly.
func startServe(t *testing.T, cfg map[string]any) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg["listen"] = addr
	if _, ok := cfg["data_dir"]; !ok {
		cfg["data_dir"] = filepath.Join(dir, "data")
	}
	s := &served{base: "http://" + addr, config: filepath.Join(dir, "config.json"), stderr: &lockedBuffer{}}
	writeJSON(t, s.config, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	codec := make(chan int, 1)
	go func() {
		codec <- run(ctx, []string{"serve", "--config", s.config}, strings.NewReader(""), &lockedBuffer{}, s.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-codec:
			if code != exitOK {
				t.Errorf("serve exit code: got %d, want 0\nstderr:\n%s", code, s.stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop within 30s")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.base + "/mcp")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-codec:
			t.Fatalf("serve exited with %d\nstderr:\n%s", code, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer within 30s\nstderr:\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, d, dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startClient starts c and initializes its session.
func startClient(ctx context.Context, t *testing.T, c *client.Client) {
	t.Helper()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: t.Name(), Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
}
