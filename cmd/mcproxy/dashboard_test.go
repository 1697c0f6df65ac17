package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the dashboard screenshot to docs/dashboard.png (taken by TestDashboardShowsActivity)")

// chromium finds Debian's chromium. A missing browser skips the test on a
// plain `go test ./...`, like a missing npm package, and fails it where
// testenv.RequireNPMEnv is set: scripts/test (CI, .ci/run) installs
// chromium with the npm packages and sets it, so the test never skips there.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("MCPROXY_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium on PATH: install it (Debian: apt-get install -y chromium; scripts/test does) or set MCPROXY_CHROMIUM"
	if os.Getenv(testenv.RequireNPMEnv) != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (skipped; " + testenv.RequireNPMEnv + "=1 makes it fail)")
	return ""
}

// headless runs chromium once on url with extra flags and returns stdout.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=8000"}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.Bytes()
}

// The dashboard in a real headless browser: the page loads (auth_token in
// the URL fragment, as `mcproxy status` prints the link), shows the configured servers with their
// state, the error of the one that fails, the tools, a session, and the
// search box answers what retrieve_tools would. /status and `mcproxy
// status` report the same; a typo in allowed_tools is warned about.
func TestDashboardInChromium(t *testing.T) {
	bin := chromium(t)
	const token = "dash-secret"
	cfg := map[string]any{
		"auth_token": token,
		"mcpServers": map[string]any{
			"memory": map[string]any{
				"command":       testenv.NodeBin(t, "mcp-server-memory"),
				"env":           map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")},
				"allowed_tools": []string{"read_graf", "memory:search_nodes", "memory:open_nodes"},
			},
			"broken": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-mcp-server")},
		},
	}
	s := startServe(t, cfg)

	// One client call, so there is a session to show.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := tokenClient(ctx, t, s.base, token)
	call := mcp.CallToolRequest{}
	call.Params.Name = "retrieve_tools"
	call.Params.Arguments = map[string]any{"query": "search nodes in the knowledge graph"}
	if res, err := c.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("retrieve_tools: %v %+v", err, res)
	}

	// /status, with the token and without.
	get := func(path string, auth bool) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp, b.Bytes()
	}
	if resp, _ := get("/status", false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/status without the token: got %d, want 401", resp.StatusCode)
	}
	var st dashboard.Status
	eventually(t, "both servers settled in /status", 30*time.Second, func() bool {
		_, body := get("/status", true)
		st = dashboard.Status{}
		_ = json.Unmarshal(body, &st)
		return len(st.Servers) == 2 && st.Servers[0].State == "down" && st.Servers[1].State == "ready"
	}, func() string { _, b := get("/status", true); return string(b) + "\n" + s.stderr.String() })
	if mem := st.Servers[1]; mem.ToolCount != 2 || len(mem.Tools) != 2 || mem.Since == nil {
		t.Errorf("memory in /status: got %+v, want 2 tools (search_nodes, open_nodes) and a since", mem)
	}
	if broken := st.Servers[0]; !strings.Contains(broken.LastError, "no-such-mcp-server") {
		t.Errorf("broken's last_error: got %q, want it to name the missing command", broken.LastError)
	}
	if st.IndexSize != 2 || len(st.Sessions) != 1 {
		t.Errorf("/status: got index_size %d and %d sessions, want 2 and 1", st.IndexSize, len(st.Sessions))
	}

	// The allowed_tools typo is warned about, with a suggestion; the
	// server:tool form was taken.
	if !strings.Contains(s.stderr.String(), `\"read_graf\" matches no tool of memory (did you mean \"read_graph\"?)`) {
		t.Errorf("no warning about read_graf in the log:\n%s", s.stderr.String())
	}

	// `mcproxy status` reads the same, and exits non-zero with a server down.
	code, out, errOut := runCLI(t, "status", "--config", s.config)
	if code != exitError || !strings.Contains(out, "memory") || !strings.Contains(out, "no-such-mcp-server") {
		t.Errorf("mcproxy status: exit %d (want 1: a server is down)\n%s%s", code, out, errOut)
	}
	if want := "dashboard: " + s.base + "/#token=<auth_token>\n"; !strings.Contains(out, want) || strings.Contains(out, token) {
		t.Errorf("mcproxy status: got\n%s\nwant the line %q, and never the token", out, want)
	}

	// The page, in chromium, opened as that line says.
	link := s.base + "/?q=search+nodes+in+the+knowledge+graph#token=" + token
	dom := string(headless(t, bin, link, "--dump-dom"))
	for _, want := range []string{
		`<tr data-server="memory">`, `<span class="state ready">ready</span>`,
		`<tr data-server="broken">`, `<span class="state down">down</span>`,
		`data-error-of="broken"`, "no-such-mcp-server",
		`<details data-server="memory">`, "open_nodes",
		`<li data-id="memory:search_nodes">`,
		`<tr data-session="`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s; DOM:\n%s", want, dom)
		}
	}
	if strings.Contains(dom, `<span id="summary">cannot reach`) || strings.Contains(dom, `class="empty">search failed`) {
		t.Errorf("the page reports an error:\n%s", dom)
	}

	// A screenshot of the same page: the right size, not blank.
	screenshot(t, bin, link, 1280, 760)

	// The guard's Host check covers the page too.
	req, _ := http.NewRequest(http.MethodGet, s.base+"/", nil)
	req.Host = "evil.example"
	req.Header.Set(authheader.Token, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("page with a foreign Host: got %d, want 403", resp.StatusCode)
	}
}

// tokenClient is an initialized MCP client of the mcproxy at base, sending
// auth_token token; the test closes it.
func tokenClient(ctx context.Context, t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	startClient(ctx, t, c)
	return c
}

// screenshot takes a PNG of url in chromium at width x height, checks that
// it has that size and is not blank, and returns it.
func screenshot(t *testing.T, bin, url string, width, height int) []byte {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	headless(t, bin, url, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars")
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot size: got %v, want %dx%d", b, width, height)
	}
	if n := colors(img); n < 8 {
		t.Errorf("screenshot has %d colours: blank page?", n)
	}
	return data
}

// colors counts the distinct colours of img, up to 1000.
func colors(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= 1000 {
				return len(seen)
			}
		}
	}
	return len(seen)
}
