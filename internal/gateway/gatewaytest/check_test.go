package gatewaytest

import (
	"strings"
	"testing"
)

func TestCheckersRejectBrokenStreams(t *testing.T) {
	good := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if err := CheckAnthropicStream([]byte(good)); err != nil {
		t.Fatalf("good stream rejected: %v", err)
	}
	bad := map[string]string{
		"cut":            strings.TrimSuffix(good, "\n"),
		"wrong index":    strings.Replace(good, `"index":0,"delta"`, `"index":1,"delta"`, 1),
		"no stop":        strings.Replace(good, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "", 1),
		"wrong delta":    strings.Replace(good, "text_delta", "input_json_delta", 1),
		"second start":   strings.Replace(good, "event: message_delta", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_delta", 1),
		"not json":       strings.Replace(good, `{"type":"message_stop"}`, `{"type":"message_stop"`, 1),
		"event mismatch": strings.Replace(good, "event: message_stop", "event: message_end", 1),
	}
	for name, b := range bad {
		if err := CheckAnthropicStream([]byte(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	okOpenAI := "data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	if err := CheckOpenAIStream([]byte(okOpenAI)); err != nil {
		t.Fatalf("good OpenAI stream rejected: %v", err)
	}
	for name, b := range map[string]string{
		"no done":     strings.TrimSuffix(okOpenAI, "data: [DONE]\n\n"),
		"two ids":     strings.Replace(okOpenAI, `"id":"a"`, `"id":"b"`, 1),
		"no finish":   strings.Replace(okOpenAI, `"stop"`, `null`, 1),
		"event lines": "event: x\n" + okOpenAI,
		"tool no id":  strings.Replace(okOpenAI, `{"content":"x"}`, `{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}`, 1),
	} {
		if err := CheckOpenAIStream([]byte(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
