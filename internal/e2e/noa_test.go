package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The tests in this file drive noa through the real binary: a scripted
// mcp-go client plays the model against real npm upstreams whose results are
// bulky (server-filesystem reading large files the test writes,
// server-everything echoing long messages), with a small noa.context_limit so
// the model is asked to compress after a dozen calls.

// noaFixture is an mcproxy config with filesystem and everything upstreams
// and a small noa window.
type noaFixture struct {
	dir, fsDir, data, config string
}

const (
	testContextLimit = 20000
	testMaxResult    = 3000
)

func newNoaFixture(t *testing.T) *noaFixture {
	t.Helper()
	dir := t.TempDir()
	fsDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsDir = filepath.Join(fsDir, "files")
	if err := os.Mkdir(fsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &noaFixture{dir: dir, fsDir: fsDir, data: filepath.Join(dir, "data"), config: filepath.Join(dir, "config.json")}
	writeConfigFile(t, f.config, map[string]any{
		"mcpServers": map[string]any{
			"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{fsDir}},
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
		},
		"data_dir":     f.data,
		"init_timeout": "60s",
		"log_level":    "debug",
		"noa":          map[string]any{"context_limit": testContextLimit, "max_result_tokens": testMaxResult},
	})
	return f
}

func (f *noaFixture) sessionDir(id string) string { return filepath.Join(f.data, "sessions", id) }

// cli runs `mcproxy sessions ARGS --config F` and returns its stdout,
// failing on a non-zero exit.
func (f *noaFixture) cli(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runBinary(t, 60*time.Second, append(append([]string{"sessions"}, args...), "--config", f.config)...)
	if code != 0 {
		t.Fatalf("mcproxy sessions %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

// prose is n deterministic words of text tagged with marker on every line,
// so a file's content can be found again in archives and transcripts.
func prose(marker string, seed int64, n int) string {
	vocab := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
		"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu " +
		"retry timeout cache index archive block summary handler config parser")
	rng := rand.New(rand.NewSource(seed))
	var b strings.Builder
	line := 0
	for i := 0; i < n; i++ {
		if i%16 == 0 {
			if i > 0 {
				b.WriteByte('\n')
			}
			line++
			fmt.Fprintf(&b, "%s line %d:", marker, line)
		}
		b.WriteByte(' ')
		b.WriteString(vocab[rng.Intn(len(vocab))])
	}
	b.WriteByte('\n')
	return b.String()
}

// connectHTTP opens an mcp-go streamable HTTP client and initializes it,
// returning the initialize result.
func connectHTTP(t *testing.T, base string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c := startHTTP(t, base+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "mcproxy-e2e-model", Version: "0"}
	init, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if c.GetSessionId() == "" {
		t.Fatal("no Mcp-Session-Id after initialize")
	}
	return c, init
}

// tryCall is callTool returning errors instead of failing, for goroutines.
func tryCall(c *client.Client, name string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// model is the scripted model of one session: what it has read, by ref.
type model struct {
	t      testing.TB
	c      *client.Client
	fx     *noaFixture
	tag    string
	n      int
	result map[string][]string // ref of a result -> the upstream's text blocks
}

func newModel(t testing.TB, c *client.Client, fx *noaFixture, tag string) *model {
	return &model{t: t, c: c, fx: fx, tag: tag, result: map[string][]string{}}
}

// call runs an upstream tool through call_tool and remembers its result.
func (m *model) call(id string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := tryCall(m.c, "call_tool", map[string]any{"name": id, "arguments": args})
	if err != nil {
		return nil, fmt.Errorf("call_tool %s: %w", id, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("call_tool %s: tool error %q", id, text(res))
	}
	ref := refOf(res)
	if ref == "" {
		return nil, fmt.Errorf("call_tool %s: no ref tag in %q", id, text(res))
	}
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok && !isNoaBlock(tc.Text) {
			m.result[ref] = append(m.result[ref], tc.Text)
		}
	}
	return res, nil
}

// readNewFile writes a file of words and reads it back through the
// filesystem server.
func (m *model) readNewFile(words int) (*mcp.CallToolResult, string, error) {
	m.n++
	marker := fmt.Sprintf("%s-FILE-%03d", m.tag, m.n)
	content := prose(marker, int64(len(m.tag))*1000+int64(m.n), words)
	path := filepath.Join(m.fx.fsDir, marker+".txt")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return nil, "", err
	}
	res, err := m.call("filesystem:read_text_file", map[string]any{"path": path})
	if err == nil && upstreamText(res) != content && !strings.Contains(text(res), noa.TruncationMarker) {
		err = fmt.Errorf("read %s: got %d bytes, want the file's %d", path, len(upstreamText(res)), len(content))
	}
	return res, content, err
}

// fillUntilNudge reads bulky files, and every third call has server-everything
// echo a long message, until a result carries a nudge.
func (m *model) fillUntilNudge() (string, error) {
	for i := 0; i < 60; i++ {
		var res *mcp.CallToolResult
		var err error
		if i%3 == 2 {
			res, err = m.call("everything:echo", map[string]any{"message": prose(fmt.Sprintf("%s-ECHO-%03d", m.tag, i), int64(i), 900)})
		} else {
			res, _, err = m.readNewFile(1100)
		}
		if err != nil {
			return "", err
		}
		if n := nudgeOf(res); n != "" {
			return n, nil
		}
	}
	return "", fmt.Errorf("no nudge after 60 bulky calls with noa.context_limit %d", testContextLimit)
}

// currentState matches show's line for a state.json that matches the
// transcript.
var currentState = regexp.MustCompile(`(?m)^state\.json\s+current$`)

var nudgeRange = regexp.MustCompile(`(m\d{5})–(m\d{5})\s+compressible`)

// rangesOf reads the ranges a nudge recommends.
func rangesOf(nudge string) [][2]string {
	var out [][2]string
	for _, m := range nudgeRange.FindAllStringSubmatch(nudge, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// summarize builds Compress arguments with a summary per range, the way a
// model following noa's prompt writes them.
func summarize(ranges [][2]string) map[string]any {
	var items []any
	for _, r := range ranges {
		items = append(items, map[string]any{
			"start": r[0], "end": r[1], "topic": "bulk reads",
			"summary": fmt.Sprintf("Read the generated data files and echoes from %s to %s. Each line is a marker and "+
				"NATO words; nothing in them needs acting on. TASK AS OF THIS BLOCK: keep reading the next files.", r[0], r[1]),
		})
	}
	return map[string]any{"content": items}
}

func refNum(ref string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(ref, "m"))
	return n
}

func refName(n int) string { return fmt.Sprintf("m%05d", n) }

// readArchive pages through read_archive and returns the concatenated
// pages.
func readArchive(t testing.TB, c *client.Client, args map[string]any) string {
	t.Helper()
	var b strings.Builder
	next := regexp.MustCompile(`"offset":(\d+)\}\]$`)
	for page := 0; page < 200; page++ {
		res := callTool(t, c, "read_archive", args)
		if res.IsError || len(res.Content) < 2 {
			t.Fatalf("read_archive %v: got %q (isError %v)", args, text(res), res.IsError)
		}
		body, _ := mcp.AsTextContent(res.Content[0])
		note, _ := mcp.AsTextContent(res.Content[1])
		if body == nil || note == nil {
			t.Fatalf("read_archive %v: got non-text content %v", args, res.Content)
		}
		b.WriteString(body.Text)
		m := next.FindStringSubmatch(note.Text)
		if m == nil {
			if !strings.Contains(note.Text, "end of the archive") {
				t.Fatalf("read_archive page note %q names neither the next offset nor the end", note.Text)
			}
			return b.String()
		}
		off, _ := strconv.Atoi(m[1])
		args = cloneArgs(args)
		args["offset"] = off
	}
	t.Fatalf("read_archive %v: more than 200 pages", args)
	return ""
}

func cloneArgs(a map[string]any) map[string]any {
	out := make(map[string]any, len(a)+1)
	for k, v := range a {
		out[k] = v
	}
	return out
}

// archiveSnapshot is every file under a session's archive, by relative
// path.
func archiveSnapshot(t testing.TB, sessionDir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(sessionDir, "archive")
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// blockTable is the block section of `mcproxy sessions show`, and the
// blocks line of its header.
func blockTable(show string) string {
	var keep []string
	in := false
	for _, line := range strings.Split(show, "\n") {
		switch {
		case strings.HasPrefix(line, "blocks "):
			keep = append(keep, line)
		case strings.HasPrefix(line, "BLOCK "):
			in = true
		}
		if in {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// stopProc ends a serving mcproxy gracefully and waits for it.
func stopProc(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s of SIGTERM", p.name)
	}
}

// TestNoaEndToEnd is issue 5's acceptance run: the model works until it is
// asked to compress, compresses what the nudge recommends, and every
// original stays exactly recoverable, through read_archive and through the
// CLI after a restart.
func TestNoaEndToEnd(t *testing.T) {
	t.Parallel()
	fx := newNoaFixture(t)
	base, p := serveHTTP(t, fx.config)
	c, init := connectHTTP(t, base)
	if !strings.Contains(init.Instructions, session.MCPInstructions()) || !strings.Contains(init.Instructions, "retrieve_tools") {
		t.Errorf("initialize instructions: got %q, want mcproxy's and noa's", init.Instructions)
	}
	names := listTools(t, c)
	for _, want := range []string{"Compress", "read_archive"} {
		if !sortedContains(names, want) {
			t.Fatalf("tools/list: got %v, want %s", names, want)
		}
	}
	id := c.GetSessionId()
	sdir := fx.sessionDir(id)
	m := newModel(t, c, fx, "E2E")

	// A non-text result passes through untouched, tagged.
	img, err := m.call("everything:get-tiny-image", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasImage(img) {
		t.Errorf("get-tiny-image: got %v, want its image content passed through", img.Content)
	}

	nudge, err := m.fillUntilNudge()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first nudge after %d calls:\n%s", len(m.result), nudge)
	ranges := rangesOf(nudge)
	if len(ranges) == 0 {
		t.Fatalf("the nudge recommends no range I can read:\n%s", nudge)
	}

	var blocks []string
	t.Run("compress what the nudge recommends", func(t *testing.T) {
		res := callTool(t, c, "Compress", summarize(ranges))
		panel := text(res)
		t.Logf("panel:\n%s", panel)
		if res.IsError || !strings.Contains(panel, "block(s) created") {
			t.Fatalf("Compress: got %q (isError %v), want blocks created", panel, res.IsError)
		}
		blocks = regexp.MustCompile(`\bb\d+\b`).FindAllString(panel, -1)
		blocks = uniq(blocks)
		if len(blocks) == 0 {
			t.Fatalf("the panel names no block:\n%s", panel)
		}
		files := archiveSnapshot(t, sdir)
		var all strings.Builder
		for rel, body := range files {
			if strings.HasPrefix(rel, "tier1/") {
				all.WriteString(body)
			}
		}
		// Every result in a compressed range is in an archive, verbatim.
		inRanges := 0
		for ref, blocks := range m.result {
			for _, r := range ranges {
				if refNum(ref) < refNum(r[0]) || refNum(ref) > refNum(r[1]) {
					continue
				}
				inRanges++
				for _, original := range blocks {
					if !strings.Contains(all.String(), original) {
						t.Errorf("a text block of result %s (%d bytes) is not verbatim in the tier-1 archives %v", ref, len(original), keys(files))
					}
				}
			}
		}
		if inRanges == 0 {
			t.Fatalf("no recorded result lies in the ranges %v", ranges)
		}
		// read_archive returns each block's archive file byte for byte.
		for _, b := range blocks {
			got := readArchive(t, c, map[string]any{"block": b})
			file := ""
			for rel, body := range files {
				if strings.HasPrefix(rel, "tier1/"+b+"_") {
					file = body
				}
			}
			if file == "" || got != file {
				t.Errorf("read_archive %s: got %d bytes, want the %d bytes of its archive file byte-identical", b, len(got), len(file))
			}
		}
	})

	// Small calls after the compression: no nudge, and (later) a range too
	// small to be worth compressing.
	var tinyRef string
	t.Run("nudges stop", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			res, err := m.call("everything:echo", map[string]any{"message": "after compress " + strconv.Itoa(i)})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				tinyRef = refOf(res)
			}
			if n := nudgeOf(res); n != "" {
				t.Errorf("call %d after Compress still nudges:\n%s", i, n)
			}
		}
	})
	if tinyRef == "" {
		t.FailNow()
	}

	// More work, until the second request to compress: the bad calls below
	// need uncompressed ranges that are not in the recent tail.
	nudge2, err := m.fillUntilNudge()
	if err != nil {
		t.Fatal(err)
	}
	ranges2 := rangesOf(nudge2)
	if len(ranges2) == 0 {
		t.Fatalf("the second nudge recommends no range:\n%s", nudge2)
	}
	t.Logf("second nudge:\n%s", nudge2)
	s2, e2 := ranges2[0][0], ranges2[0][1]
	if refNum(e2)-refNum(s2) < 3 {
		t.Fatalf("the second nudge's first range %s–%s is too short for the overlap case", s2, e2)
	}
	mid := refName((refNum(s2) + refNum(e2)) / 2)
	longSummary := "Read the generated data files; every line is a marker and NATO words, nothing to act on."
	item := func(s, e, summary string) map[string]any {
		return map[string]any{"start": s, "end": e, "summary": summary}
	}

	t.Run("bad input changes nothing", func(t *testing.T) {
		tests := []struct {
			name string
			args any
			want string // in the corrective message
		}{
			// What a client forwards when the model's JSON was cut off: the
			// arguments as a string, ending inside the only range.
			{"truncated JSON", fmt.Sprintf(`{"content": [{"start": %q, "end": %q, "summ`, s2, e2), "not valid JSON"},
			{"stringified array", map[string]any{"content": fmt.Sprintf(`[%q, %q]`, s2, e2)}, "Call Compress again"},
			{"unknown refs", map[string]any{"content": []any{item("m09990", "m09999", longSummary)}}, "m09990"},
			{"refs already compressed", map[string]any{"content": []any{item(ranges[0][0], ranges[0][1], longSummary)}}, "already compressed"},
			{"overlapping ranges", map[string]any{"content": []any{item(s2, mid, longSummary), item(mid, e2, longSummary)}}, "overlap"},
			{"batch under the size gate", map[string]any{"content": []any{item(refName(refNum(tinyRef)-1), tinyRef, longSummary)}}, "characters"},
			{"summary too short", map[string]any{"content": []any{item(s2, e2, "read files")}}, "summary"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				beforeFiles, beforeShow := archiveSnapshot(t, sdir), blockTable(fx.cli(t, "show", id))
				res, err := tryCall(c, "Compress", tc.args)
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				got := text(res)
				if !res.IsError || !strings.Contains(got, tc.want) || strings.Contains(got, "block(s) created") {
					t.Errorf("got %q (isError %v), want a corrective error containing %q", got, res.IsError, tc.want)
				}
				if diff := cmp.Diff(beforeFiles, archiveSnapshot(t, sdir)); diff != "" {
					t.Errorf("archives changed (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(beforeShow, blockTable(fx.cli(t, "show", id))); diff != "" {
					t.Errorf("blocks changed (-before +after):\n%s", diff)
				}
			})
		}
	})

	t.Run("a correct call still works after the bad ones", func(t *testing.T) {
		res := callTool(t, c, "Compress", summarize(ranges2))
		if res.IsError || !strings.Contains(text(res), "block(s) created") {
			t.Fatalf("Compress of the second nudge's ranges: got %q (isError %v)", text(res), res.IsError)
		}
		blocks = uniq(append(blocks, regexp.MustCompile(`\bb\d+\b`).FindAllString(text(res), -1)...))
	})

	var bigRef, bigContent string
	t.Run("oversize result is cut and fully recoverable", func(t *testing.T) {
		res, content, err := m.readNewFile(12 * testMaxResult / 2)
		if err != nil {
			t.Fatal(err)
		}
		bigRef, bigContent = refOf(res), content
		got := upstreamText(res)
		if !strings.Contains(got, noa.TruncationMarker) || !strings.Contains(got, `read_archive {"ref":"`+bigRef+`"`) {
			t.Fatalf("a %d-byte result over max_result_tokens %d: got %d bytes without the truncation marker and read_archive pointer", len(content), testMaxResult, len(got))
		}
		if len(got) >= len(content) || !strings.HasPrefix(content, got[:200]) || !strings.HasSuffix(content, got[len(got)-200:]) {
			t.Errorf("cut result: got %d bytes, want the original's head and tail in fewer than its %d", len(got), len(content))
		}
		if all := readArchive(t, c, map[string]any{"ref": bigRef}); all != content {
			t.Errorf("read_archive %s: got %d bytes, want the %d-byte original byte-identical", bigRef, len(all), len(content))
		}
		// The pointer in the note fetches exactly the cut part.
		ptr := regexp.MustCompile(`read_archive (\{[^}]*\})`).FindStringSubmatch(got)
		var args map[string]any
		if ptr == nil || json.Unmarshal([]byte(ptr[1]), &args) != nil {
			t.Fatalf("no usable read_archive call in the note of %q", got)
		}
		from, to := int(args["offset"].(float64)), int(args["offset"].(float64)+args["limit"].(float64))
		page := callTool(t, c, "read_archive", args)
		body, _ := mcp.AsTextContent(page.Content[0])
		if page.IsError || body == nil || body.Text == "" || !strings.HasPrefix(content[from:to], body.Text) {
			t.Errorf("the note's read_archive call: got %q (isError %v), want the start of bytes %d-%d of the original", text(page), page.IsError, from, to)
		}
	})

	// The client leaves, the proxy stops: everything stays readable from
	// disk through the CLI.
	c.Close()
	stopProc(t, p)
	archives := archiveSnapshot(t, sdir)

	t.Run("sessions CLI after the run", func(t *testing.T) {
		list := fx.cli(t, "list")
		if !strings.Contains(list, id) {
			t.Errorf("sessions list: got\n%s\nwant the session %s", list, id)
		}
		show := fx.cli(t, "show", id)
		t.Logf("sessions show:\n%s", show)
		if !currentState.MatchString(show) || strings.Contains(show, "MISSING") {
			t.Errorf("sessions show: got\n%s\nwant a current state.json and no missing archive", show)
		}
		for _, b := range blocks {
			if !regexp.MustCompile(`(?m)^` + b + `\s+T\d`).MatchString(show) {
				t.Errorf("sessions show: block %s missing from\n%s", b, show)
			}
			out := fx.cli(t, "archive", id, b)
			want := ""
			for rel, body := range archives {
				if strings.Contains(rel, "/"+b+"_") {
					want = body
				}
			}
			if want == "" || out != want {
				t.Errorf("sessions archive %s: got %d bytes, want its %d-byte archive file", b, len(out), len(want))
			}
		}
		if out := fx.cli(t, "archive", id, bigRef); out != bigContent {
			t.Errorf("sessions archive %s: got %d bytes, want the cut result's %d-byte original", bigRef, len(out), len(bigContent))
		}
		rebuilt := fx.cli(t, "rebuild", id)
		if !strings.Contains(rebuilt, "state.json before: current") || strings.Contains(rebuilt, "recreated") {
			t.Errorf("sessions rebuild: got\n%s\nwant it to find state.json current and nothing to recreate", rebuilt)
		}
		if diff := cmp.Diff(blockTable(show), blockTable(fx.cli(t, "show", id))); diff != "" {
			t.Errorf("blocks after rebuild (-before +after):\n%s", diff)
		}
	})

	t.Run("restart keeps earlier sessions readable", func(t *testing.T) {
		base, p2 := serveHTTP(t, fx.config)
		c2, _ := connectHTTP(t, base)
		m2 := newModel(t, c2, fx, "RESTART")
		if _, err := m2.call("everything:echo", map[string]any{"message": "new run"}); err != nil {
			t.Fatal(err)
		}
		c2.Close()
		stopProc(t, p2)
		list := fx.cli(t, "list")
		if !strings.Contains(list, id) || !strings.Contains(list, c2.GetSessionId()) {
			t.Errorf("sessions list after a restart: got\n%s\nwant both %s and %s", list, id, c2.GetSessionId())
		}
		if diff := cmp.Diff(archives, archiveSnapshot(t, sdir)); diff != "" {
			t.Errorf("the first session's archives changed across a restart (-before +after):\n%s", diff)
		}
		if out := fx.cli(t, "archive", id, blocks[0]); !strings.Contains(out, "# "+blocks[0]+" (tier") {
			t.Errorf("sessions archive %s after a restart: got %q", blocks[0], out)
		}
	})
}

func hasImage(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		if _, ok := mcp.AsImageContent(c); ok {
			return true
		}
	}
	return false
}

func sortedContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestNoaSessionFaults: an archive directory that cannot be written makes
// Compress fail cleanly with nothing changed, and two clients working at the
// same time over streamable HTTP never see each other's refs, blocks or
// archives.
func TestNoaSessionFaults(t *testing.T) {
	fx := newNoaFixture(t)
	base, _ := serveHTTP(t, fx.config)

	t.Run("unwritable archive directory", func(t *testing.T) {
		c, _ := connectHTTP(t, base)
		id := c.GetSessionId()
		sdir := fx.sessionDir(id)
		m := newModel(t, c, fx, "BLOCKED")
		nudge, err := m.fillUntilNudge()
		if err != nil {
			t.Fatal(err)
		}
		ranges := rangesOf(nudge)
		// A regular file where the tier-1 directory must go.
		blocker := filepath.Join(sdir, "archive", "tier1")
		if err := os.WriteFile(blocker, []byte("in the way"), 0o600); err != nil {
			t.Fatal(err)
		}
		before, beforeShow := archiveSnapshot(t, sdir), blockTable(fx.cli(t, "show", id))
		res := callTool(t, c, "Compress", summarize(ranges))
		if !res.IsError || strings.Contains(text(res), "block(s) created") {
			t.Fatalf("Compress with the archive blocked: got %q (isError %v), want a clean failure", text(res), res.IsError)
		}
		t.Logf("Compress with the archive blocked:\n%s", text(res))
		if diff := cmp.Diff(before, archiveSnapshot(t, sdir)); diff != "" {
			t.Errorf("archives changed (-before +after):\n%s", diff)
		}
		after := fx.cli(t, "show", id)
		if diff := cmp.Diff(beforeShow, blockTable(after)); diff != "" || !strings.Contains(after, "no blocks yet") {
			t.Errorf("blocks after a failed Compress (-before +after):\n%s\n%s", diff, after)
		}
		// Storage back: the same call goes through.
		if err := os.Remove(blocker); err != nil {
			t.Fatal(err)
		}
		res = callTool(t, c, "Compress", summarize(ranges))
		if res.IsError || !strings.Contains(text(res), "block(s) created") {
			t.Errorf("Compress once the archive is writable again: got %q (isError %v)", text(res), res.IsError)
		}
	})

	t.Run("two clients are isolated", func(t *testing.T) {
		type outcome struct {
			id, tag, firstRef, archive string
			err                        error
		}
		out := []*outcome{{tag: "ALICE"}, {tag: "BOB"}}
		var wg sync.WaitGroup
		for _, o := range out {
			c, _ := connectHTTP(t, base)
			o.id = c.GetSessionId()
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := newModel(t, c, fx, o.tag)
				first, _, err := m.readNewFile(50)
				if err != nil {
					o.err = err
					return
				}
				o.firstRef = refOf(first)
				nudge, err := m.fillUntilNudge()
				if err != nil {
					o.err = err
					return
				}
				res, err := tryCall(c, "Compress", summarize(rangesOf(nudge)))
				if err != nil || res.IsError {
					o.err = fmt.Errorf("Compress: %v %q", err, text(res))
					return
				}
				page, err := tryCall(c, "read_archive", map[string]any{"block": "b1"})
				if err != nil || page.IsError {
					o.err = fmt.Errorf("read_archive b1: %v", err)
					return
				}
				o.archive = text(page)
			}()
		}
		wg.Wait()
		if out[0].id == out[1].id {
			t.Fatalf("both clients got session %s", out[0].id)
		}
		for i, o := range out {
			if o.err != nil {
				t.Fatalf("%s: %v", o.tag, o.err)
			}
			other := out[1-i].tag
			if o.firstRef != "m00002" {
				t.Errorf("%s's first result: got ref %s, want m00002 (its own numbering)", o.tag, o.firstRef)
			}
			if !strings.Contains(o.archive, o.tag+"-FILE-") || strings.Contains(o.archive, other+"-") {
				t.Errorf("%s's read_archive b1: own marker %v, %s's marker %v; want only its own", o.tag,
					strings.Contains(o.archive, o.tag+"-FILE-"), other, strings.Contains(o.archive, other+"-"))
			}
			tr, err := os.ReadFile(filepath.Join(fx.sessionDir(o.id), "transcript.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(tr), o.tag+"-FILE-") || strings.Contains(string(tr), other+"-FILE-") {
				t.Errorf("%s's transcript: want only its own files", o.tag)
			}
			for rel, body := range archiveSnapshot(t, fx.sessionDir(o.id)) {
				if strings.Contains(body, other+"-") {
					t.Errorf("%s's archive %s holds %s's results", o.tag, rel, other)
				}
			}
		}
	})
}

// TestNoaKilledDuringCompress kills mcproxy with SIGKILL while a Compress is
// in flight, at a few points from "just sent" to "just answered"; each time
// the session on disk is consistent: every block has its archive, and a
// rebuild from the transcript agrees with what show reported.
func TestNoaKilledDuringCompress(t *testing.T) {
	t.Parallel()
	fx := newNoaFixture(t)
	for _, delay := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, -1} {
		name := "answered"
		if delay >= 0 {
			name = "after " + delay.String()
		}
		t.Run(name, func(t *testing.T) {
			addr := freeAddr(t)
			p := startProc(t, "mcproxy serve", exec.Command(binary, "serve", "--config", fx.config, "--listen", addr))
			waitListening(t, addr, p)
			c, _ := connectHTTP(t, "http://"+addr)
			id := c.GetSessionId()
			m := newModel(t, c, fx, "KILL")
			nudge, err := m.fillUntilNudge()
			if err != nil {
				t.Fatal(err)
			}
			answered := make(chan error, 1)
			go func() {
				res, err := tryCall(c, "Compress", summarize(rangesOf(nudge)))
				if err == nil && res.IsError {
					err = fmt.Errorf("Compress: %s", text(res))
				}
				answered <- err
			}()
			if delay < 0 {
				if err := <-answered; err != nil {
					t.Fatal(err)
				}
			} else {
				time.Sleep(delay)
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.done
			c.Close()

			show := fx.cli(t, "show", id)
			outcome := "the Compress was applied"
			if strings.Contains(show, "no blocks yet") {
				outcome = "the Compress was not applied"
			}
			if strings.Contains(show, "orphan archives") {
				outcome += "; it had written archives it never recorded (reported as orphans)"
			}
			t.Logf("%s; sessions show after SIGKILL:\n%s", outcome, show)
			if strings.Contains(show, "MISSING") {
				t.Errorf("a block without its archive after SIGKILL:\n%s", show)
			}
			rebuilt := fx.cli(t, "rebuild", id)
			if strings.Contains(rebuilt, "recreated") {
				t.Errorf("rebuild had to recreate an archive after SIGKILL:\n%s", rebuilt)
			}
			again := fx.cli(t, "show", id)
			if !currentState.MatchString(again) || strings.Contains(again, "MISSING") {
				t.Errorf("sessions show after rebuild: got\n%s\nwant a current state and every archive present", again)
			}
			if diff := cmp.Diff(blockTable(show), blockTable(again)); diff != "" {
				t.Errorf("blocks changed across rebuild (-show after kill +show after rebuild):\n%s", diff)
			}
			if delay < 0 && strings.Contains(again, "no blocks yet") {
				t.Errorf("the Compress was answered before the kill but no block survived:\n%s", again)
			}
		})
	}
}

// TestNoaDefaultFsyncSurvivesKill: with the default "fsync"
// ("every_second", TestOptionsFromFsync) a call is answered before its
// records are flushed, but after they are written, so mcproxy killed
// (SIGKILL) right after its answers loses none of them: the next `mcproxy
// sessions show` finds every call and result.
func TestNoaDefaultFsyncSurvivesKill(t *testing.T) {
	fx := newNoaFixture(t)
	var cfg map[string]any
	b, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if fsync, set := cfg["noa"].(map[string]any)["fsync"]; set {
		t.Fatalf("the fixture sets noa.fsync (%v); this test is of the default", fsync)
	}

	addr := freeAddr(t)
	p := startProc(t, "mcproxy serve", exec.Command(binary, "serve", "--config", fx.config, "--listen", addr))
	waitListening(t, addr, p)
	c, _ := connectHTTP(t, "http://"+addr)
	id := c.GetSessionId()
	const calls = 3
	for i := 0; i < calls; i++ {
		res, err := tryCall(c, "call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": fmt.Sprintf("KEPT-%d", i)}})
		if err != nil || res.IsError {
			t.Fatalf("call_tool everything:echo: %v %v", err, res)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	c.Close()

	show := fx.cli(t, "show", id)
	if !strings.Contains(show, fmt.Sprintf("%d records", 2*calls)) {
		t.Errorf("sessions show after SIGKILL: want %d records (every call and result answered before the kill):\n%s", 2*calls, show)
	}
	tr, err := os.ReadFile(filepath.Join(fx.sessionDir(id), "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < calls; i++ {
		if n := strings.Count(string(tr), fmt.Sprintf("KEPT-%d", i)); n < 2 {
			t.Errorf("KEPT-%d appears %d times in the transcript, want its call and its result", i, n)
		}
	}
}
