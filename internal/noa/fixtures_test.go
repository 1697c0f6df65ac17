package noa

import "strings"

func txt(id string, role Role, text string) CoreMessage {
	return CoreMessage{ID: id, Role: role, ContentType: CTText, Text: text}
}

func think(id, text string) CoreMessage {
	return CoreMessage{ID: id, Role: RoleAssistant, ContentType: CTReasoning, Text: text}
}

func call(id, callID, tool string) CoreMessage {
	return CoreMessage{ID: id, Role: RoleAssistant, ContentType: CTToolCall, ToolName: tool, ToolCallID: callID, Text: "{}"}
}

func result(id, callID, tool, text string) CoreMessage {
	return CoreMessage{ID: id, Role: RoleTool, ContentType: CTToolResult, ToolName: tool, ToolCallID: callID, Text: text}
}

// stateFor assigns refs to msgs the way ProcessTurn does.
func stateFor(msgs []CoreMessage, cfg Config) CompressionState {
	return syncRefs(msgs, CreateInitialState("s1", "/archive/s1"), cfg, nil)
}

func idsOf(msgs []CoreMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func long(word string, n int) string { return strings.TrimSpace(strings.Repeat(word+" ", n)) }

// testConfig is a small-window config with the soft zone switched off, so
// tests control protection explicitly.
func testConfig() Config {
	cfg := DefaultConfig(100000)
	cfg.PreserveRecentMessages = 0
	cfg.PreserveRecentTokens = 0
	cfg.Compress.MinCompressRange = 0
	cfg.Compress.MinSummaryLength = 10
	return cfg
}

const okSummary = "a summary long enough to pass the minimum length"
