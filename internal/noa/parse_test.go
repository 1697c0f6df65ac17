package noa

import (
	"strings"
	"testing"
)

func TestParseCompressArgs(t *testing.T) {
	const item = `{"start":"m00001","end":"m00004","summary":"did things","topic":"t"}`
	for _, tc := range []struct {
		name         string
		in           string
		ok           bool
		kind         CompressParseKind
		ranges       int
		invalid      int
		salvaged     bool
		tailRepaired bool
	}{
		{"well formed", `{"content":[` + item + `]}`, true, ParseOK, 1, 0, false, false},
		{"two ranges", `{"topic":"x","content":[` + item + `,` + item + `]}`, true, ParseOK, 2, 0, false, false},
		{"empty", "  ", false, ParseEmptyInput, 0, 0, false, false},
		{"null", "null", false, ParseEmptyInput, 0, 0, false, false},
		{"array", `[` + item + `]`, false, ParseNotObject, 0, 0, false, false},
		{"number", `42`, false, ParseNotObject, 0, 0, false, false},
		{"no content", `{"topic":"x"}`, false, ParseMissingContent, 0, 0, false, false},
		{"content null", `{"content":null}`, false, ParseMissingContent, 0, 0, false, false},
		{"content number", `{"content":5}`, false, ParseContentNotList, 0, 0, false, false},
		{"content plain string", `{"content":"hello"}`, false, ParseContentNotList, 0, 0, false, false},
		{"empty list", `{"content":[]}`, false, ParseNoValidRanges, 0, 0, false, false},
		{"all invalid", `{"content":[{"start":"m1"},7]}`, false, ParseNoValidRanges, 0, 2, false, false},
		{"some invalid", `{"content":[{"start":"m1"},` + item + `]}`, true, ParseOK, 1, 1, false, false},
		{"trailing commas", `{"content":[` + item + `,],}`, true, ParseMalformedJSON, 1, 0, false, false},
		{"stringified array", `{"content":"[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"}]"}`, true, ParseOK, 1, 0, false, false},
		{"stringified items", `{"content":["{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"}"]}`, true, ParseOK, 1, 0, false, false},
		{"double encoded", `"{\"content\":[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"}]}"`, true, ParseOK, 1, 0, false, false},
		{"double encoded and cut", `"{\"content\":[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"},{\"start\":\"m3"`, true, ParseTruncated, 1, 0, true, false},
		{"double encoded, cut before anything", `"{\"content\":[{\"start\":\"m1\",\"end"`, false, ParseMalformedJSON, 0, 0, false, false},
		{"single object content", `{"content":` + item + `}`, true, ParseOK, 1, 0, false, false},
		{"missing closing brace", `{"content":[` + item + `]`, true, ParseTruncated, 1, 0, false, true},
		{"missing closing brackets", `{"content":[` + item + `,` + item, true, ParseTruncated, 2, 0, false, true},
		{"cut inside a summary", `{"content":[` + item + `,{"start":"m5","end":"m9","summary":"half wri`, true, ParseTruncated, 1, 0, true, false},
		{"cut after a key", `{"content":[` + item + `,{"start":`, true, ParseTruncated, 1, 0, true, false},
		{"cut before anything", `{"content":[{"start":"m1","end`, false, ParseMalformedJSON, 0, 0, false, false},
		{"garbage", `{{{not json`, false, ParseMalformedJSON, 0, 0, false, false},
		{"aliases", `{"content":[{"startId":"m1","end_ref":"m2","text":"s"}]}`, true, ParseOK, 1, 0, false, false},
		{"stringified and cut", `{"content":"[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"},{\"start\":\"m3`, true, ParseTruncated, 1, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseCompressArgs([]byte(tc.in))
			d := got.Diagnostics
			if d.Ok != tc.ok || d.Kind != tc.kind || len(got.Ranges) != tc.ranges || d.InvalidItems != tc.invalid ||
				d.Salvaged != tc.salvaged || d.TailRepaired != tc.tailRepaired {
				t.Errorf("got ok=%v kind=%s ranges=%d invalid=%d salvaged=%v tail=%v (%v); want ok=%v kind=%s ranges=%d invalid=%d salvaged=%v tail=%v",
					d.Ok, d.Kind, len(got.Ranges), d.InvalidItems, d.Salvaged, d.TailRepaired, d.InvalidReasons,
					tc.ok, tc.kind, tc.ranges, tc.invalid, tc.salvaged, tc.tailRepaired)
			}
			if d.Length != len(tc.in) {
				t.Errorf("Length = %d, want %d", d.Length, len(tc.in))
			}
		})
	}
}

func TestParseCompressArgsFields(t *testing.T) {
	got := ParseCompressArgs([]byte(`{"topic":" top ","summary_max_chars":"900","content":[
		{"start":"m1","end":"m2","summary":"one","topic":" a "},
		{"start":"b1","end":"b3","summary":"two","summary_max_chars":5000}]}`))
	if got.TopLevelTopic != "top" {
		t.Errorf("TopLevelTopic = %q", got.TopLevelTopic)
	}
	if got.SummaryMaxChars == nil || *got.SummaryMaxChars != 900 {
		t.Errorf("SummaryMaxChars = %v", got.SummaryMaxChars)
	}
	if len(got.Ranges) != 2 {
		t.Fatalf("got %d ranges", len(got.Ranges))
	}
	r0, r1 := got.Ranges[0], got.Ranges[1]
	if r0.StartRef != "m1" || r0.EndRef != "m2" || r0.Summary != "one" || r0.Topic != "a" || r0.SummaryMaxChars == nil || *r0.SummaryMaxChars != 900 {
		t.Errorf("range 0 = %+v", r0)
	}
	if r1.SummaryMaxChars == nil || *r1.SummaryMaxChars != 5000 {
		t.Errorf("range 1 max = %v, want its own 5000", r1.SummaryMaxChars)
	}
	if diff := cmpDiff([]string{"content", "summary_max_chars", "topic"}, got.Diagnostics.Keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	long := strings.Repeat("x", 2000)
	if got := ParseCompressArgs([]byte(long)).Diagnostics.RawPrefix; len(got) != 800 {
		t.Errorf("RawPrefix has %d chars, want 800", len(got))
	}
}

func TestCompressToolSchema(t *testing.T) {
	s := CompressToolSchema()
	props := s["properties"].(map[string]any)
	content := props["content"].(map[string]any)
	if _, typed := content["type"]; typed {
		t.Errorf(`"content" must carry no "type", so stringified arrays reach the lenient parser`)
	}
	if s["type"] != "object" {
		t.Errorf("schema type = %v", s["type"])
	}
	// Arguments built from the schema's field names parse back.
	args := compressArgsJSON([]CompressRange{{StartRef: "m1", EndRef: "m2", Summary: "s", Topic: "t"}})
	if r := ParseCompressArgs([]byte(args)); !r.Diagnostics.Ok || r.Ranges[0].Topic != "t" {
		t.Errorf("round trip failed: %+v", r)
	}
}

func FuzzParseCompressArgs(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"start":"m00001","end":"m00004","summary":"s"}]}`,
		`{"content":[{"start":"m1","end":"m2","summary":"s"},],}`,
		`{"content":"[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"}]"}`,
		`{"content":[{"start":"m1","end":"m2","summary":"s"}]`,
		`{"content":[{"start":"m1","end":"m2","summary":"s"},{"start":"m3","end":"m4","summary":"cut off he`,
		`{"content":"[{\"start\":\"m1\",\"end\":\"m2\",\"summary\":\"s\"},{\"start`,
		`"{\"content\":[]}"`, `[]`, `{}`, ``, `null`, `{"content":{}}`, `{"content":[1,"x",null]}`,
		`{"content":[{"start":"m1","end":"m2","summary":"\u4f60\u597d"}]}`, `}}]]{{[[`, `{"a":"\`, `{"content":["{\"start\":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := ParseCompressArgs(raw)
		d := got.Diagnostics
		if !d.Ok && len(got.Ranges) != 0 {
			t.Fatalf("!Ok with %d ranges", len(got.Ranges))
		}
		if d.Ok != (len(got.Ranges) > 0) {
			t.Fatalf("Ok=%v with %d ranges", d.Ok, len(got.Ranges))
		}
		if d.Kind == "" {
			t.Fatalf("no kind")
		}
		for _, r := range got.Ranges {
			if strings.TrimSpace(r.StartRef) == "" || strings.TrimSpace(r.EndRef) == "" || strings.TrimSpace(r.Summary) == "" {
				t.Fatalf("range with an empty field: %+v", r)
			}
		}
	})
}
