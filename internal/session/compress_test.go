package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every bad Compress call is answered with a correction for the model and
// changes no block, ref or archive.
func TestCompressBadInput(t *testing.T) {
	summary := "Read the data files; facts extracted: alpha and bravo are set, the retry loop in internal/session/host.go:212 is fine."
	item := func(start, end, sum string) map[string]any {
		return map[string]any{"start": start, "end": end, "summary": sum, "topic": "reads"}
	}
	args := func(items ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"content": items})
		return string(b)
	}
	tests := []struct {
		name string
		raw  string
		// already compresses m00001-m00008 first
		after bool
		// minChars overrides the batch size gate
		minChars int
		want     []string
	}{
		{name: "truncated JSON", raw: args(item("m00001", "m00008", summary))[:40], want: []string{"could not be used", "not valid JSON", `"content"`}},
		{name: "stringified document that is an array", raw: string(mustJSON(`[{"start":"m00001","end":"m00008"}]`)), want: []string{"could not be used", "not a JSON object"}},
		{name: "content a plain string", raw: `{"content": "m00001 to m00008"}`, want: []string{"could not be used", `"content" is not a list`}},
		{name: "missing content", raw: `{"ranges": []}`, want: []string{`no "content" field (found: ranges)`}},
		{name: "not JSON at all", raw: `compress m1-m8 please`, want: []string{"could not be used", "not valid JSON"}},
		{name: "unknown refs", raw: args(item("m00500", "m00600", summary)), want: []string{"range 1 (m00500..m00600)", "nothing was compressed"}},
		{name: "invalid ref", raw: args(item("x1", "m00008", summary)), want: []string{"range 1"}},
		{name: "refs already compressed", after: true, raw: args(item("m00002", "m00005", summary)), want: []string{"range 1 (m00002..m00005)", "already"}},
		{name: "overlapping ranges", raw: args(item("m00001", "m00006", summary), item("m00005", "m00008", summary)), want: []string{"range 2 (m00005..m00008) overlaps range 1 (m00001..m00006)", "nothing was compressed"}},
		{name: "batch under the size gate", minChars: 20000, raw: args(item("m00001", "m00002", summary), item("m00003", "m00004", summary)), want: []string{"cover only", "at least"}},
		{name: "summary too short", raw: args(item("m00001", "m00008", "ok")), want: []string{"the summary has 2 characters, fewer than the minimum"}},
		{name: "summary empty", raw: args(item("m00001", "m00008", "  ")), want: []string{"could not be used"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.Noa.Compress.MinCompressRange = 3000
			if tc.minChars > 0 {
				opts.Noa.Compress.MinCompressRange = tc.minChars
			}
			h := openHost(t, opts, "s")
			rng := newRand(2)
			for i := 0; i < 12; i++ {
				call(t, h, "fs:read", words(rng, 400))
			}
			if tc.after {
				if res := compress(t, h, []byte(args(item("m00001", "m00008", summary)))); res.IsError {
					t.Fatalf("setup compress: %q", res.Text)
				}
			}
			before, files := h.State(), archiveFiles(t, h)
			msgs := len(h.Messages())
			res := compress(t, h, []byte(tc.raw))
			panel := res.Text
			if !res.IsError {
				t.Errorf("got a success panel, want a tool error:\n%s", panel)
			}
			if !strings.HasPrefix(panel, "Compress: nothing was compressed.") || !strings.Contains(panel, "Errors (fix and call again):") {
				t.Errorf("got panel\n%s\nwant noa's panel with its corrective errors", panel)
			}
			for _, w := range tc.want {
				if !strings.Contains(panel, w) {
					t.Errorf("panel lacks %q:\n%s", w, panel)
				}
			}
			assertUnchanged(t, h, before, files)
			// The call and its panel are part of the conversation.
			if got := len(h.Messages()); got != msgs+2 {
				t.Errorf("got %d messages, want %d (the call and its panel recorded)", got, msgs+2)
			}
		})
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// A repaired call (content sent as a JSON string) applies and says so.
func TestCompressRepairedArguments(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	rng := newRand(2)
	for i := 0; i < 12; i++ {
		call(t, h, "fs:read", words(rng, 400))
	}
	inner := string(compressArgs([][2]string{{"m00001", "m00008"}}))
	var obj map[string]json.RawMessage
	json.Unmarshal([]byte(inner), &obj)
	raw, _ := json.Marshal(map[string]string{"content": string(obj["content"])})
	res := compress(t, h, raw)
	if panel := res.Text; res.IsError || !strings.Contains(panel, "1 block(s) created") {
		t.Fatalf("got panel\n%s\nwant the stringified list repaired and applied", panel)
	}
}

func TestCompressNoRanges(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	call(t, h, "fs:read", "x")
	res := compress(t, h, []byte(`{"content": []}`))
	if got := res.Text; got != "No ranges provided." || res.IsError {
		t.Errorf("got %q (error %v), want noa's neutral answer", got, res.IsError)
	}
}
