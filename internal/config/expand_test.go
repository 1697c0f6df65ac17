package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{
		"HOME":  "/home/ann",
		"EMPTY": "",
		"TOKEN": "s3cr$t",
		"NEST":  "${HOME}",
	}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name, in, want string
		wantErr        string // substring; empty means no error
	}{
		{name: "plain", in: "npx", want: "npx"},
		{name: "var", in: "${HOME}/data", want: "/home/ann/data"},
		{name: "two vars", in: "${HOME}:${TOKEN}", want: "/home/ann:s3cr$t"},
		{name: "set but empty", in: "a${EMPTY}b", want: "ab"},
		{name: "default unused", in: "${HOME:-/tmp}", want: "/home/ann"},
		{name: "default when unset", in: "${NOPE:-/tmp}", want: "/tmp"},
		{name: "default when empty", in: "${EMPTY:-x}", want: "x"},
		{name: "empty default", in: "[${NOPE:-}]", want: "[]"},
		{name: "default with colon", in: "${NOPE:-http://a:1}", want: "http://a:1"},
		{name: "nested default", in: "${NOPE:-${HOME}/m.json}", want: "/home/ann/m.json"},
		{name: "nested default unset", in: "${NOPE:-${ALSO_NOPE:-z}}", want: "z"},
		{name: "value not re-expanded", in: "${NEST}", want: "${HOME}"},
		{name: "dollar dollar", in: "$$", want: "$"},
		{name: "escaped reference", in: "$${HOME}", want: "${HOME}"},
		{name: "lone dollar", in: "pa$word $", want: "pa$word $"},
		{name: "dollar then brace later", in: "$x{y}", want: "$x{y}"},
		{name: "unset", in: "Bearer ${GITHUB_TOKEN}", wantErr: "${GITHUB_TOKEN} is not set: export GITHUB_TOKEN, or give a default with ${GITHUB_TOKEN:-value}"},
		{name: "unset inside default", in: "${NOPE:-${ALSO_NOPE}}", wantErr: "${ALSO_NOPE} is not set"},
		{name: "unterminated", in: "${HOME", wantErr: "unterminated \"${HOME\""},
		{name: "empty name", in: "${}", wantErr: "\"\" is not a variable name"},
		{name: "bad name", in: "${1X}", wantErr: "\"1X\" is not a variable name"},
		{name: "bash substitution not supported", in: "${HOME/a/b}", wantErr: "\"HOME/a/b\" is not a variable name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expand(tc.in, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("expand(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("expand(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
