package trajectory

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The source files in testdata/import are small runs of our own in the
// shape each agent records; no test reads a fetched run.

func readSource(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// bash is a bash call's arguments as the converter writes them.
func bash(command string) json.RawMessage {
	b, err := marshal(map[string]string{"command": command})
	if err != nil {
		panic(err)
	}
	return b
}

// same compares trajectories by their stored JSON, so raw arguments and
// schemas compare by their bytes.
func same(t *testing.T, got, want *Trajectory) {
	t.Helper()
	g, err := marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var gv, wv any
	json.Unmarshal(g, &gv)
	json.Unmarshal(w, &wv)
	if diff := cmp.Diff(wv, gv); diff != "" {
		t.Errorf("converted run differs (-want +got):\n%s", diff)
	}
}

func TestImportMiniSWE1(t *testing.T) {
	t.Parallel()
	got, err := Import(readSource(t, "mini-swe-agent-1.traj.json"), ImportOptions{Source: "here"})
	if err != nil {
		t.Fatal(err)
	}
	const fence = "```"
	same(t, got, &Trajectory{
		ID: "toy-model-1.toy__clock-7", Agent: "mini-swe-agent 1.9.0", Model: "toy-model-1", Task: "toy__clock-7", Source: "here",
		System:      "You fix bugs with one shell command per reply, in a fenced bash block.",
		Tools:       []Tool{BashTool},
		TaskMessage: "<task>\nclock.tick() skips a second at midnight.\n</task>",
		Steps: []Step{
			// The block becomes the call, stripped as the agent ran it; the
			// text is what is left, the answer the call's result.
			{Text: "THOUGHT: find where tick is defined.", Calls: []Call{{Name: "bash", Arguments: bash("grep -rn 'def tick' src && echo done")}},
				Results: []string{"<returncode>0</returncode>\n<output>\nsrc/toy/clock_core.py:12:    def tick(self):\ndone\n</output>"}},
			// Two blocks, then none: no call, the format error a user message.
			{Text: "Two things to try:\n" + fence + "bash\nsed -n 1,20p src/toy/clock_core.py\n" + fence + "\nand\n" + fence + "bash\npython -m pytest\n" + fence,
				User: []string{"Send exactly one fenced block per reply; this one had 2."}},
			{Text: "Sorry, no command this time.", User: []string{"Send exactly one fenced block per reply; this one had 0."}},
			// Text on both sides of the block, joined; Python's \s after the
			// fence takes in a no-break space; a timeout answers the call.
			{Text: "Run the slow check first.\n\nThen read it.", Calls: []Call{{Name: "bash", Arguments: bash("sleep 999 | cat src/toy/clock_core.py")}},
				Results: []string{"The command was stopped after 60 seconds; it printed nothing."}},
			// The submission answers the last call.
			{Text: "Done; submit.", Calls: []Call{{Name: "bash", Arguments: bash("echo SUBMIT-NOW && git diff")}},
				Results: []string{"diff --git a/src/toy/clock_core.py b/src/toy/clock_core.py\n-        self.s += 2\n+        self.s += 1\n"}},
		},
	})
}

func TestImportMiniSWE2(t *testing.T) {
	t.Parallel()
	got, err := Import(readSource(t, "mini-swe-agent-2.traj.json"), ImportOptions{ID: "toy.queue", Agent: "an agent", Model: "a model", Task: "a task"})
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, &Trajectory{
		ID: "toy.queue", Agent: "an agent", Model: "a model", Task: "a task",
		System:      "You fix bugs by calling the bash tool.",
		Tools:       []Tool{BashTool},
		TaskMessage: "<task>\nQueue.pop() on an empty queue hangs instead of raising.\n</task>",
		Steps: []Step{
			// Results in call order, whatever order the tool messages came in.
			{Text: "Look at the queue and its tests at once.", Calls: []Call{
				{Name: "bash", Arguments: bash("grep -n 'def pop' src/toy/q_impl.py && echo ok")},
				{Name: "bash", Arguments: bash("ls tests/ | head -3 > /tmp/list.txt; cat /tmp/list.txt")},
			}, Results: []string{
				"<returncode>0</returncode>\n<output>\n31:    def pop(self):\nok\n</output>",
				"<returncode>0</returncode>\n<output>\ntest_q_impl.py\n</output>",
			}},
			{Text: "I think the loop never ends.", User: []string{"Every reply must call the bash tool at least once."}},
			{Calls: []Call{{Name: "bash", Arguments: bash("sed -n 31,40p src/toy/q_impl.py")}},
				Results: []string{"<returncode>0</returncode>\n<output>\n    def pop(self):\n        while not self._items:\n            pass\n</output>"}},
			// The exit record is not a message: the last call stays unanswered.
			{Text: "Submit.", Calls: []Call{{Name: "bash", Arguments: bash("echo SUBMIT-NOW && git diff")}}},
		},
	})
}

func TestImportOpenHands(t *testing.T) {
	t.Parallel()
	got, err := Import(readSource(t, "openhands.output.jsonl"), ImportOptions{Instance: "toy__lru-5"})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(s string) json.RawMessage { return json.RawMessage(s) }
	same(t, got, &Trajectory{
		ID: "toy-model-3.toy__lru-5", Agent: "OpenHands ToyAgent (agent commit 0123456789ab)", Model: "toy-model-3", Task: "toy__lru-5",
		System: "You are a toy agent.",
		Tools: []Tool{
			{Name: "run_shell", Description: "Run a shell command.", InputSchema: schema(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
			{Name: "done", Description: "Say the task is finished.", InputSchema: schema(`{"type":"object","properties":{}}`)},
		},
		TaskMessage: "Fix the LRU eviction order in src/toy.",
		Steps: []Step{
			{Text: "List the sources first.", Calls: []Call{{Name: "run_shell", Arguments: schema(`{"command":"ls src"}`)}}, Results: []string{"lru_bits.c\nlru_bits.h"}},
			// One model response, two actions: one turn with both calls; the
			// error observation no call owns follows as a user message.
			{Text: "Read both halves.", Calls: []Call{
				{Name: "run_shell", Arguments: schema(`{"command":"head -5 src/toy/lru_bits.c"}`)},
				{Name: "run_shell", Arguments: schema(`{"command":"tail -5 src/toy/lru_bits.c"}`)},
			}, Results: []string{`#include "lru_bits.h"`, "}  /* evict_oldest */"},
				User: []string{"The tool call could not be parsed: missing 'command'."}},
			{Calls: []Call{{Name: "done", Arguments: schema(`{}`)}}},
		},
	})
}

func TestDetectFormat(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"mini-swe-agent-1.traj.json": FormatMiniSWE1,
		"mini-swe-agent-2.traj.json": FormatMiniSWE2,
		"openhands.output.jsonl":     FormatOpenHands,
	} {
		got, err := DetectFormat(readSource(t, file))
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", file, got, err, want)
		}
	}
	if _, err := DetectFormat([]byte(`{"steps": []}`)); err == nil || !strings.Contains(err.Error(), FormatOpenHands) {
		t.Errorf("an unknown file: got %v, want an error naming the formats", err)
	}
}

func TestImportRejects(t *testing.T) {
	t.Parallel()
	v1 := string(readSource(t, "mini-swe-agent-1.traj.json"))
	v2 := string(readSource(t, "mini-swe-agent-2.traj.json"))
	oh := string(readSource(t, "openhands.output.jsonl"))
	cases := []struct {
		name     string
		data     string
		old, new string // an edit of data, when old is set
		o        ImportOptions
		want     string // in the error
	}{
		{name: "unknown format", data: v1, o: ImportOptions{Format: "sweagent"}, want: "want one of " + strings.Join(Formats, ", ")},
		{name: "several records, none named", data: oh, want: "toy__other-1, toy__lru-5"},
		{name: "no such instance", data: oh, o: ImportOptions{Instance: "toy__nope"}, want: `no record has instance id "toy__nope"`},
		{name: "id with a slash", data: v1, o: ImportOptions{ID: "../x"}, want: "cannot name a file"},
		{name: "an instance for a one-run file", data: v2, o: ImportOptions{Instance: "toy__queue-3"}, want: "leave the instance out"},
		{name: "no model to make the id of", data: v1, old: `"model_name": "acme/toy-model-1"`, new: `"model_name": ""`, want: "give the id"},
		{name: "tool calls read as 1.x", data: v2, o: ImportOptions{Format: FormatMiniSWE1}, want: "read the run as " + FormatMiniSWE2},
		{name: "a result for no call", data: v2, old: `"tool_call_id": "c-2"`, new: `"tool_call_id": "c-9"`, want: `call id "c-9"`},
		{name: "a call left unanswered mid-run", data: v2, old: `"tool_call_id": "c-3"`, new: `"tool_call_id": "c-9"`, want: `call id "c-9"`},
		{name: "arguments not an object", data: v2, old: `"{\"command\": \"sed -n 31,40p src/toy/q_impl.py\"}"`, new: `"[1]"`, want: "not a JSON object"},
		{name: "an empty turn", data: v1, old: `"Sorry, no command this time."`, new: `""`, want: "not a conversation a provider would accept"},
		{name: "an OpenHands event it does not know", data: oh, old: `"action": "recall"`, new: `"action": "browse"`, o: ImportOptions{Instance: "toy__lru-5"}, want: `action "browse"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := tc.data
			if tc.old != "" {
				if !strings.Contains(data, tc.old) {
					t.Fatalf("the source has no %s to edit", tc.old)
				}
				data = strings.Replace(data, tc.old, tc.new, 1)
			}
			_, err := Import([]byte(data), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestStoreWrite(t *testing.T) {
	t.Parallel()
	tr, err := Import(readSource(t, "mini-swe-agent-1.traj.json"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := Open(Options{Dir: filepath.Join(t.TempDir(), "new")}) // Write creates it
	path, err := st.Write(tr, false)
	if err != nil {
		t.Fatal(err)
	}
	back, err := st.Load(tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, back, tr)

	// The stored JSON keeps a command's "&&" and "<" as the agent wrote them.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`src \u0026\u0026 echo done`, `\u003creturncode\u003e`} {
		if bytes.Contains(raw, []byte(want)) {
			t.Errorf("the stored run escapes HTML: it holds %s", want)
		}
	}
	if !bytes.Contains(raw, []byte(`"command":"grep -rn 'def tick' src && echo done"`)) {
		t.Errorf("the stored run lacks the first call's arguments as written; it holds %.300s", raw)
	}

	if _, err := st.Write(tr, false); !errors.Is(err, ErrExists) {
		t.Errorf("a second write: got %v, want ErrExists", err)
	}
	if _, err := st.Write(tr, true); err != nil {
		t.Errorf("replacing: %v", err)
	}
	bad := *tr
	bad.Steps = nil
	if _, err := st.Write(&bad, true); err == nil {
		t.Error("writing a run with no steps: got no error, want one")
	}
	if back, err := st.Load(tr.ID); err != nil || len(back.Steps) != len(tr.Steps) {
		t.Errorf("after the refused write: got %v, want the stored run intact", err)
	}
}
