package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// TestCoopKnowsItsCutText: a long assistant text that the gateway cut to
// fit the window (head and tail around noa's note) still places the
// scripted model after that step; it used to place it before, so it
// answered the cut step again (off script, and its whole output paid
// twice).
func TestCoopKnowsItsCutText(t *testing.T) {
	long := "THOUGHT: " + strings.Repeat("I keep thinking about the plan. ", 400) + "\nDone thinking."
	tr := &trajectory.Trajectory{ID: "t", TaskMessage: "Fix it.", Steps: []trajectory.Step{
		{Text: "Looking.", Calls: []trajectory.Call{{Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}, Results: []string{"a.py"}},
		{Text: long},
		{Text: "Now editing.", Calls: []trajectory.Call{{Name: "bash", Arguments: json.RawMessage(`{"command":"vi a.py"}`)}}, Results: []string{"ok"}},
	}}
	m := newCoop(tr, nil, nil)
	cut := long[:300] + "\n[cut by mcproxy: 12000 tokens; read_archive {\"ref\": \"m00004\"}]\n" + long[len(long)-200:]
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": cut}})
	if k, ok := m.turnOf(content, 0); !ok || k != 1 {
		t.Errorf("turnOf(the cut text of step 1) = %d, %v; want 1, true", k, ok)
	}
	other, _ := json.Marshal([]map[string]string{{"type": "text", "text": long[:300] + " but then something else entirely"}})
	if k, ok := m.turnOf(other, 0); ok {
		t.Errorf("turnOf(a text that only opens like step 1) = %d; want no step", k)
	}
}
