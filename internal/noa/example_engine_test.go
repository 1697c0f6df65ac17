package noa_test

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// A host keeps one Engine per session: built once from the transcript and
// the saved state, then fed each message once.
func ExampleEngine() {
	e := noa.NewEngine(noa.EngineInput{
		State:  noa.CreateInitialState("s1", "/data/sessions/s1/archive"),
		Config: noa.DefaultConfig(200000),
	})
	e.Append(
		noa.CoreMessage{ID: "c1", Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "read_file", ToolCallID: "call-1", Text: `{"path":"README.md"}`},
		noa.CoreMessage{ID: "r1", Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "read_file", ToolCallID: "call-1", Text: "# mcproxy\nOne endpoint for many MCP servers."},
	)
	t := e.Turn(0) // 0: judge the context by the projected view
	ref, tokens, _ := e.Ref("r1")
	fmt.Println(noa.FormatRefTag(ref, tokens), len(t.View), t.ProjectedTokens, t.Nudge != nil)
	// Output: [m00002 · 14 tok] 2 22 false
}
