package main

import (
	"strings"
	"testing"
)

// A backquoted phrase in a flag's usage becomes its argument name in
// -help ("-expansion mcproxy embeddings build", issue 18): every flag line
// must read "-name" or "-name ARG".
func TestFlagUsageArgumentNames(t *testing.T) {
	for _, cmd := range [][]string{
		{"serve"}, {"search"}, {"bench"}, {"import"}, {"setup"}, {"add"}, {"remove"}, {"status"}, {"servers"}, {"doctor"},
		{"sessions", "list"}, {"sessions", "prune"}, {"bench", "import"},
	} {
		_, out, errOut := runCLI(t, append(cmd, "--help")...)
		text := out + errOut
		flags := 0
		for _, line := range strings.Split(text, "\n") {
			// The flag package's lines; embeddings writes its own.
			if !strings.HasPrefix(line, "  -") || strings.HasPrefix(line, "  --") {
				continue
			}
			flags++
			if f := strings.Fields(line); len(f) > 2 {
				t.Errorf("mcproxy %s --help: flag line %q has a multi-word argument name", strings.Join(cmd, " "), line)
			}
		}
		if flags == 0 {
			t.Errorf("mcproxy %s --help: no flag lines in\n%s", strings.Join(cmd, " "), text)
		}
	}
}

// learned --help lists every subcommand, not only list's flags (issue 30).
func TestLearnedHelpListsEverySubcommand(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		code, out, errOut := runCLI(t, "learned", arg)
		if code != exitOK {
			t.Errorf("learned %s: got exit %d, want 0\n%s", arg, code, errOut)
		}
		for _, want := range []string{"learned [list [TOOL]]", "learned forget TOOL", "learned reset"} {
			if !strings.Contains(out, want) {
				t.Errorf("learned %s: got %q, want it to hold %q", arg, out+errOut, want)
			}
		}
	}
}
