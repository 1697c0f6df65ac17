package trajectory_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// Two steps of a run: the request before step 1 carries the task, step 0's
// call and its result, with an id that every later request repeats.
func ExampleTrajectory_Anthropic() {
	tr := &trajectory.Trajectory{
		ID: "demo", Model: "m", System: "You are a shell agent.", TaskMessage: "Fix the bug.",
		Tools: []trajectory.Tool{{Name: "bash", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Steps: []trajectory.Step{
			{Text: "Look first.", Calls: []trajectory.Call{{Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}, Results: []string{"a.py"}},
			{Text: "Done."},
		},
	}
	body, err := tr.Anthropic(1, trajectory.RenderOptions{MaxTokens: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(body))
	// Output:
	// {"model":"m","max_tokens":64,"system":"You are a shell agent.","tools":[{"name":"bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Fix the bug."}]},{"role":"assistant","content":[{"type":"text","text":"Look first."},{"type":"tool_use","id":"toolu_aefd3536_0_0","name":"bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_aefd3536_0_0","content":"a.py"}]}]}
}
