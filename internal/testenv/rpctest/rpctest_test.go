package rpctest

import "testing"

func TestAnswer(t *testing.T) {
	t.Parallel()
	const plain = `{"jsonrpc":"2.0","id":9,"result":{}}`
	streamed := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\"}\n\n" +
		"event: message\ndata: " + plain + "\n\n"
	for body, want := range map[string]string{plain: plain, streamed: plain, "Not Found\n": "Not Found\n"} {
		if got := Answer(body); got != want {
			t.Errorf("Answer(%q) = %q, want %q", body, got, want)
		}
	}
}
