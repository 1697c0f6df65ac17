package trajectory

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

var update = flag.Bool("update", false, "rewrite testdata/summary.golden")

// The synthetic runs in testdata, written by hand in the shape of a coding
// agent's work; no test reads the fetched runs.
const (
	divideID = "fixture.bash.divide-by-zero" // bash tool, a format error, ends with results in
	cacheID  = "fixture.bash.cache-ttl-zero" // divide's agent; ends on a call
	editorID = "fixture.editor.escaped-quote"
	// sessionID joins divide and cache, as LongSession joins its parts.
	sessionID = "fixture.session"
	// sessionThreshold stands for LongSession's 200K at the fixture's
	// scale: the session crosses it, no part of it does.
	sessionThreshold = 1500
)

// fixtureDir writes the testdata runs, gzip-compressed as stored runs are,
// into a fresh directory and returns it.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("listing testdata runs: got %v (%v), want some", names, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		writeGzip(t, filepath.Join(dir, filepath.Base(name)+".gz"), data)
	}
	return dir
}

func writeGzip(t *testing.T, file string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture loads the testdata runs through Open and LoadAll and joins divide
// and cache into the session, through the store as LongSession does.
func fixture(t *testing.T) (map[string]*Trajectory, *Trajectory) {
	t.Helper()
	st := Open(Options{Dir: fixtureDir(t)})
	all, err := st.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Trajectory{}
	for _, tr := range all {
		byID[tr.ID] = tr
	}
	session, err := st.Session(sessionID, divideID, cacheID)
	if err != nil {
		t.Fatal(err)
	}
	return byID, session
}

// runs lists the fixture's runs by id, then the session.
func runs(byID map[string]*Trajectory, session *Trajectory) []*Trajectory {
	return []*Trajectory{byID[cacheID], byID[divideID], byID[editorID], session}
}

func counter(t *testing.T) *tokens.Counter {
	t.Helper()
	c, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOpen(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == DirEnv {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"option first", Options{Dir: "a", Getenv: env("b")}, "a"},
		{"then the environment", Options{Getenv: env("b")}, "b"},
		{"then the built-in runs", Options{Getenv: env("")}, BuiltIn},
	}
	for _, tc := range cases {
		if got := Open(tc.o).Dir; got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// A nil Getenv reads the process environment, and the store reads the
	// directory it names.
	dir := fixtureDir(t)
	t.Setenv(DirEnv, dir)
	st := Open(Options{})
	if st.Dir != dir {
		t.Fatalf("with $%s set: got %q, want %q", DirEnv, st.Dir, dir)
	}
	all, err := st.LoadAll()
	if err != nil || len(all) != 3 {
		t.Errorf("loading from $%s: got %d runs (%v), want 3", DirEnv, len(all), err)
	}
}

func TestLoadAll(t *testing.T) {
	t.Parallel()
	st := Open(Options{Dir: fixtureDir(t)})
	all, err := st.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tr := range all {
		ids = append(ids, tr.ID)
		if tr.Source == "" || tr.Task == "" || tr.Agent == "" || len(tr.Tools) == 0 {
			t.Errorf("%s: agent, source, task and tools must be set", tr.ID)
		}
	}
	if want := []string{cacheID, divideID, editorID}; !cmp.Equal(ids, want) {
		t.Errorf("got ids %v, want %v", ids, want)
	}
	if _, err := st.Load("no-such-run"); !errors.Is(err, ErrNotFound) {
		t.Errorf("loading a missing id: got %v, want ErrNotFound", err)
	}
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(filepath.Join("testdata", divideID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		write func(dir string)
		want  string // in the error
	}{
		{"missing directory", func(dir string) { os.Remove(dir) }, DirEnv},
		{"no runs", func(string) {}, DirEnv},
		{"id differs from the file name", func(dir string) { writeGzip(t, filepath.Join(dir, "other"+Ext), good) }, `file holds id "` + divideID + `"`},
		{"unknown field", func(dir string) {
			writeGzip(t, filepath.Join(dir, divideID+Ext), bytes.Replace(good, []byte(`"id"`), []byte(`"extra": 1, "id"`), 1))
		}, "unknown field"},
		{"not gzip", func(dir string) { os.WriteFile(filepath.Join(dir, divideID+Ext), good, 0o644) }, "gzip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.write(dir)
			_, err := Open(Options{Dir: dir}).LoadAll()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestPrefixStable(t *testing.T) {
	t.Parallel()
	for _, tr := range runs(fixture(t)) {
		var every []int
		for k := 1; k < tr.Requests(); k++ {
			every = append(every, k)
		}
		checkPrefixes(t, tr, every)
	}
}

func TestRequestsAreWellFormed(t *testing.T) {
	t.Parallel()
	for _, tr := range runs(fixture(t)) {
		for k := 0; k < tr.Requests(); k++ {
			a, err := tr.AnthropicMessages(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkAnthropic(a); err != nil {
				t.Errorf("%s request %d: anthropic: %v", tr.ID, k, err)
			}
			o, err := tr.OpenAIMessages(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkOpenAI(o); err != nil {
				t.Errorf("%s request %d: openai: %v", tr.ID, k, err)
			}
		}
		if _, err := tr.Anthropic(tr.Requests(), RenderOptions{}); err == nil {
			t.Errorf("%s: rendering past the last step: got no error, want one", tr.ID)
		}
		body, err := tr.Anthropic(tr.Requests()-1, RenderOptions{Model: "m", MaxTokens: 7, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Stream    bool   `json:"stream"`
			System    string `json:"system"`
		}
		if err := json.Unmarshal(body, &head); err != nil {
			t.Fatalf("%s: request is not JSON: %v", tr.ID, err)
		}
		if head.Model != "m" || head.MaxTokens != 7 || !head.Stream || head.System != tr.System {
			t.Errorf("%s: got model %q max_tokens %d stream %v, want the options and the system prompt", tr.ID, head.Model, head.MaxTokens, head.Stream)
		}
	}
}

// TestFacts pins the facts the fixture was written to hold, cache's at
// exactly MinFactGap steps. The runs also hold near misses the rule must
// reject: paths used again too soon (arith_ops.py after 3 steps,
// errors_base.py after 4, lru_store.py after 1, parse_string after 4), a
// name the task already gave (ZeroDivisionError, 11 steps after a result
// showed it), and repo/src/calc, written inside a longer path before its
// first use on its own.
func TestFacts(t *testing.T) {
	t.Parallel()
	byID, session := fixture(t)
	want := map[string][]Fact{
		divideID: {{Text: "tests/test_arith_errors.py", Seen: 1, Needed: 12}},
		cacheID:  {{Text: "repo/docs/cache_design.md", Seen: 0, Needed: 10}},
		editorID: {{Text: "_unescape_inner", Seen: 0, Needed: 11}, {Text: "body.replace", Seen: 0, Needed: 11}},
	}
	n := len(byID[divideID].Steps)
	want[sessionID] = []Fact{want[divideID][0], {Text: "repo/docs/cache_design.md", Seen: n, Needed: n + 10}}
	for _, tr := range runs(byID, session) {
		facts := tr.Facts()
		if diff := cmp.Diff(want[tr.ID], facts); diff != "" {
			t.Errorf("%s: facts (-want +got):\n%s", tr.ID, diff)
		}
		for _, f := range facts {
			if !strings.Contains(strings.Join(tr.Steps[f.Seen].Results, "\n"), f.Text) {
				t.Errorf("%s: %q is not in the results of step %d", tr.ID, f.Text, f.Seen)
			}
			used := false
			for _, b := range tr.AnthropicAssistant(f.Needed).Content {
				used = used || (b.Type == "tool_use" && strings.Contains(string(b.Input), f.Text))
			}
			if !used {
				t.Errorf("%s: %q is not in the tool calls of step %d", tr.ID, f.Text, f.Needed)
			}
		}
	}
}

func TestSession(t *testing.T) {
	t.Parallel()
	byID, session := fixture(t)
	divide, cache := byID[divideID], byID[cacheID]
	// Reload the parts to compare against: Session must not write into them.
	again, _ := fixture(t)
	if !cmp.Equal(again[divideID], divide) || !cmp.Equal(again[cacheID], cache) {
		t.Error("building the session changed its parts")
	}
	n := len(divide.Steps)
	if got, want := len(session.Steps), n+len(cache.Steps); got != want {
		t.Fatalf("got %d steps, want %d", got, want)
	}
	u := session.Steps[n-1].User
	if len(u) == 0 || u[len(u)-1] != cache.TaskMessage {
		t.Errorf("step %d: got user messages %q, want %s's task last", n-1, u, cacheID)
	}
	if !cmp.Equal(session.Steps[n:], cache.Steps) {
		t.Errorf("steps from %d on are not %s's", n, cacheID)
	}
	c := counter(t)
	peak := session.Stats(c).Peak
	for _, p := range []*Trajectory{divide, cache} {
		if st := p.Stats(c); st.Peak >= sessionThreshold {
			t.Errorf("%s: got %d tokens, want fewer than %d: the threshold must need the session", p.ID, st.Peak, sessionThreshold)
		}
	}
	if peak <= sessionThreshold {
		t.Errorf("got a session of %d tokens, want more than %d", peak, sessionThreshold)
	}
}

func TestSessionRejects(t *testing.T) {
	t.Parallel()
	byID, _ := fixture(t)
	cases := []struct {
		name  string
		parts []*Trajectory
	}{
		{"two agents", []*Trajectory{byID[divideID], byID[editorID]}},
		{"a part ending on a call", []*Trajectory{byID[cacheID], byID[divideID]}},
		{"no parts", nil},
	}
	for _, tc := range cases {
		if _, err := Session("s", tc.parts...); err == nil {
			t.Errorf("%s: got no error, want one", tc.name)
		}
	}
}

// TestSummary keeps testdata/summary.golden, the fixture's table in the
// form of the one that goes with the stored runs, true;
// go test ./bench/trajectory -run TestSummary -update rewrites it.
func TestSummary(t *testing.T) {
	t.Parallel()
	c := counter(t)
	var b strings.Builder
	b.WriteString("| id | agent | model | task | turns | peak tokens | facts |\n|---|---|---|---|---:|---:|---:|\n")
	for _, tr := range runs(fixture(t)) {
		st := tr.Stats(c)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %d |\n", tr.ID, tr.Agent, tr.Model, tr.Task, st.Turns, st.Peak, len(tr.Facts()))
	}
	const file = "testdata/summary.golden"
	if *update {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	golden, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(golden), b.String()); diff != "" {
		t.Errorf("%s is stale; rerun with -update (-want +got):\n%s", file, diff)
	}
}

// prefixOf reports whether the request prev, without the "]}" that closes
// its messages and the request, starts next.
func prefixOf(prev, next []byte) bool {
	head, ok := bytes.CutSuffix(prev, []byte("]}"))
	return ok && bytes.HasPrefix(next, head) && len(next) > len(head) && next[len(head)] == ','
}

// checkPrefixes checks, for each k, that request k starts with request k-1's
// messages, in both formats.
func checkPrefixes(t *testing.T, tr *Trajectory, ks []int) {
	t.Helper()
	for name, render := range map[string]func(int, RenderOptions) ([]byte, error){"anthropic": tr.Anthropic, "openai": tr.OpenAI} {
		var prev []byte
		prevK := -2
		for _, k := range ks {
			if prevK != k-1 {
				var err error
				if prev, err = render(k-1, RenderOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			next, err := render(k, RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !prefixOf(prev, next) {
				t.Fatalf("%s: request %d does not start with request %d's messages", name, k, k-1)
			}
			prev, prevK = next, k
		}
	}
}

// checkAnthropic holds msgs to the Messages API's rules: roles alternate
// from user, no message is empty, and each user message after an assistant
// turn with tool_use blocks answers every one of them, in order, first.
func checkAnthropic(msgs []AnthropicMessage) error {
	seen := map[string]bool{}
	var pending []string
	for i, m := range msgs {
		want := []string{"user", "assistant"}[i%2]
		if m.Role != want {
			return fmt.Errorf("message %d: got role %s, want %s", i, m.Role, want)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("message %d is empty", i)
		}
		var got []string
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				if seen[b.ID] {
					return fmt.Errorf("message %d: tool_use id %s used twice", i, b.ID)
				}
				seen[b.ID] = true
				got = append(got, b.ID)
			case "tool_result":
				got = append(got, b.ToolUseID)
			case "text":
				if b.Text == "" {
					return fmt.Errorf("message %d has an empty text block", i)
				}
			}
		}
		if m.Role == "assistant" {
			pending = got
			continue
		}
		if len(got) < len(pending) || !cmp.Equal(got[:len(pending)], pending) {
			return fmt.Errorf("message %d: got tool results %v, want %v", i, got, pending)
		}
		pending = nil
	}
	return nil
}

func checkOpenAI(msgs []OpenAIMessage) error {
	var pending []string
	for i, m := range msgs {
		switch m.Role {
		case "assistant":
			if len(pending) > 0 {
				return fmt.Errorf("message %d: calls %v left unanswered", i, pending)
			}
			for _, c := range m.ToolCalls {
				if !json.Valid([]byte(c.Function.Arguments)) {
					return fmt.Errorf("message %d: arguments are not JSON", i)
				}
				pending = append(pending, c.ID)
			}
		case "tool":
			if len(pending) == 0 || pending[0] != m.ToolCallID {
				return fmt.Errorf("message %d: tool message for %s, want %v", i, m.ToolCallID, pending)
			}
			pending = pending[1:]
		case "user", "system":
			if len(pending) > 0 {
				return fmt.Errorf("message %d: %s message before calls %v were answered", i, m.Role, pending)
			}
		}
	}
	return nil
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	obj := json.RawMessage(`{"command":"ls"}`)
	base := func() Trajectory {
		return Trajectory{ID: "x", TaskMessage: "do it", Steps: []Step{
			{Text: "a", Calls: []Call{{Name: "bash", Arguments: obj}}, Results: []string{"r"}},
			{Text: "b", Calls: []Call{{Name: "bash", Arguments: obj}}},
		}}
	}
	cases := []struct {
		name   string
		break_ func(*Trajectory)
	}{
		{"no steps", func(t *Trajectory) { t.Steps = nil }},
		{"empty turn", func(t *Trajectory) { t.Steps[0].Text, t.Steps[0].Calls, t.Steps[0].Results = "", nil, nil }},
		{"missing result mid-run", func(t *Trajectory) { t.Steps[0].Results = nil }},
		{"two assistant turns in a row", func(t *Trajectory) { t.Steps[0].Calls, t.Steps[0].Results = nil, nil }},
		{"arguments not an object", func(t *Trajectory) { t.Steps[1].Calls[0].Arguments = json.RawMessage(`"ls"`) }},
	}
	ok := base()
	if err := ok.Validate(); err != nil {
		t.Fatalf("the valid base: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := base()
			tc.break_(&tr)
			if err := tr.Validate(); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
}
