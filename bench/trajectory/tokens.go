package trajectory

import "github.com/mcproxy/mcproxy/internal/tokens"

// Stats sizes a trajectory.
type Stats struct {
	Turns int // assistant turns (steps)
	// Peak is the tokens of the whole history at the last turn: the last
	// request (system prompt, tool declarations, task, every earlier step
	// with its results and user messages) and the last assistant turn,
	// counted as text. What answered the last turn is left out: the model
	// never saw it (for mini-swe-agent it is the submitted patch).
	Peak int
}

// Stats counts t with c.
func (t *Trajectory) Stats(c *tokens.Counter) Stats {
	n := c.Count(t.System) + c.Count(t.TaskMessage)
	for _, tool := range t.Tools {
		n += c.Count(tool.Name) + c.Count(tool.Description) + c.Count(string(tool.InputSchema))
	}
	for i, s := range t.Steps {
		n += c.Count(s.Text)
		for _, call := range s.Calls {
			n += c.Count(call.Name) + c.Count(string(call.Arguments))
		}
		if i == len(t.Steps)-1 {
			break
		}
		for _, r := range s.Results {
			n += c.Count(r)
		}
		for _, u := range s.User {
			n += c.Count(u)
		}
	}
	return Stats{Turns: len(t.Steps), Peak: n}
}
