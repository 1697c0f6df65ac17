package config

import (
	"strings"
	"testing"
)

func strPtr(s string) *string { return &s }

func TestNamePrefix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix *string
		want   string
	}{
		{"default", nil, "git__"},
		{"configured", strPtr("g_"), "g_"},
		{"exact names", strPtr(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (ServerConfig{Prefix: tc.prefix}).NamePrefix("git"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidatePrefixCollisions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers map[string]ServerConfig
		want    string // "" = valid
	}{
		{"defaults never collide", map[string]ServerConfig{"a": {Command: "x"}, "b": {Command: "y"}}, ""},
		{"two exact-name servers are checked at list time", map[string]ServerConfig{
			"a": {Command: "x", Prefix: strPtr("")}, "b": {Command: "y", Prefix: strPtr("")}}, ""},
		{"same configured prefix", map[string]ServerConfig{
			"a": {Command: "x", Prefix: strPtr("p_")}, "b": {Command: "y", Prefix: strPtr("p_")}},
			`mcpServers.b.prefix: "p_" is also the prefix of server "a": the names of "a" and "b" would collide`},
		{"a prefix equal to another server's default", map[string]ServerConfig{
			"a": {Command: "x"}, "b": {Command: "y", Prefix: strPtr("a__")}},
			`mcpServers.b.prefix: "a__" is also the prefix of server "a"`},
		{"a disabled server takes no prefix", map[string]ServerConfig{
			"a": {Command: "x", Enabled: boolPtr(false)}, "b": {Command: "y", Prefix: strPtr("a__")}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Config{MCPServers: tc.servers}).Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
