package embed

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestSplitIdentifier(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"get_weather_forecast", []string{"get", "weather", "forecast"}},
		{"getHTTPResponse_v2", []string{"get", "http", "response", "v", "2"}},
		{"browser-navigate.back", []string{"browser", "navigate", "back"}},
		{"ListFiles", []string{"list", "files"}},
		{"", nil},
	}
	for _, tc := range tests {
		if got := splitIdentifier(tc.in); !cmp.Equal(got, tc.want) {
			t.Errorf("splitIdentifier(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestToolText(t *testing.T) {
	tests := []struct {
		name string
		in   config.ToolMetadata
		want string
	}{
		{
			name: "schema properties in name order, nested, enums",
			in: config.ToolMetadata{
				Name: "get_forecast", ServerName: "weather", Description: "  Get the forecast for a city. ",
				ParamsJSON: `{"type":"object","properties":{"units":{"type":"string","enum":["metric","imperial"]},
					"city":{"type":"string","description":"Name of the city"},
					"when":{"type":"object","title":"Time window","properties":{"days":{"type":"integer","description":"Days ahead"}}}},
					"required":["city"]}`,
			},
			want: "get forecast (server weather): Get the forecast for a city.\n" +
				"Parameters: city: Name of the city; units (one of metric, imperial); when: Time window; days: Days ahead",
		},
		{
			name: "no schema, no description",
			in:   config.ToolMetadata{Name: "ping", ServerName: "s"},
			want: "ping (server s)",
		},
		{
			name: "arm rendering kept as it is",
			in:   config.ToolMetadata{Name: "read", ServerName: "fs", Description: "Read a file.", ParamsJSON: "path:str"},
			want: "read (server fs): Read a file.\nParameters: path:str",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ToolText(tc.in)); diff != "" {
				t.Errorf("ToolText mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolTextCut(t *testing.T) {
	long := config.ToolMetadata{Name: "x", ServerName: "s", Description: strings.Repeat("é", MaxTextBytes)}
	got := ToolText(long)
	if len(got) > MaxTextBytes || !strings.HasPrefix(got, "x (server s): é") {
		t.Errorf("got %d bytes starting %q, want at most %d starting with the name", len(got), got[:20], MaxTextBytes)
	}
	if !strings.HasSuffix(got, "é") {
		t.Errorf("got a text ending in %q, want it cut at a rune boundary", got[len(got)-3:])
	}
}

func TestCacheKey(t *testing.T) {
	base := cacheKey("m", "text")
	if base != cacheKey("m", "text") {
		t.Errorf("got different keys for the same input, want equal")
	}
	for _, other := range [][2]string{{"m2", "text"}, {"m", "text2"}, {"mt", "ext"}, {"m@256", "text"}} {
		if cacheKey(other[0], other[1]) == base {
			t.Errorf("cacheKey(%q, %q): got the key of (m, text), want a different one", other[0], other[1])
		}
	}
}
