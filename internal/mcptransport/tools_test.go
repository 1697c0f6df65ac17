package mcptransport

import "testing"

func TestWithoutEmptyAnnotations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{
			"tools/list line",
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"annotations":{},"inputSchema":{"type":"object"},"name":"a"},{"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"},"name":"b"}]}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"inputSchema":{"type":"object"},"name":"a"},{"annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"},"name":"b"}]}}` + "\n",
		},
		{
			"an SSE event",
			"event: message\ndata: " + `{"jsonrpc":"2.0","id":"x","result":{"nextCursor":"c","tools":[{"annotations":{},"name":"a<b"}]}}` + "\n\n",
			"event: message\ndata: " + `{"jsonrpc":"2.0","id":"x","result":{"nextCursor":"c","tools":[{"name":"a<b"}]}}` + "\n\n",
		},
		{
			"a schema property named annotations stays",
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"inputSchema":{"properties":{"annotations":{}},"type":"object"},"name":"a"}]}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"inputSchema":{"properties":{"annotations":{}},"type":"object"},"name":"a"}]}}` + "\n",
		},
		{
			"a tool result stays",
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"annotations\":{}"}]}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"annotations\":{}"}]}}` + "\n",
		},
		{
			"a request stays",
			`{"jsonrpc":"2.0","id":1,"method":"x","params":{"tools":[{"annotations":{}}]}}`,
			`{"jsonrpc":"2.0","id":1,"method":"x","params":{"tools":[{"annotations":{}}]}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(withoutEmptyAnnotations([]byte(tc.in))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
