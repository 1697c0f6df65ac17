package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
)

func tokensConfig(t *testing.T) (cfgPath, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	dataDir = filepath.Join(dir, "data")
	cfgPath = filepath.Join(dir, "config.json")
	cfg := `{"mcpServers": {"memory": {"command": "mcp-memory"}}, "data_dir": "` + dataDir + `",
	  "profiles": {"desk": {"servers": ["memory"]}, "ro": {"annotations": ["readOnlyHint"]}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dataDir
}

// tokens create prints the token once, alone on the last line; the store
// holds only its hash; list names it without its value; revoke removes it.
func TestTokensCommand(t *testing.T) {
	cfgPath, dataDir := tokensConfig(t)
	code, out, errOut := runCLI(t, "tokens", "create", "desk-app", "--profile", "desk", "--expires", "30d", "--config", cfgPath)
	if code != exitOK {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	value := lines[len(lines)-1]
	if !strings.HasPrefix(value, clienttoken.Prefix) || strings.ContainsAny(value, " \t") {
		t.Fatalf("the last line %q is not the token alone; output:\n%s", value, out)
	}
	if strings.Count(out, value) != 1 {
		t.Errorf("the token is printed more than once:\n%s", out)
	}
	if !strings.Contains(out, "for profile(s) desk") || !strings.Contains(out, "expires 20") {
		t.Errorf("create output does not say the profile and expiry:\n%s", out)
	}
	st, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := st.Check(value); err != nil || tok.Name != "desk-app" || !tok.Allows("desk") {
		t.Errorf("the printed token does not check: %+v %v", tok, err)
	}
	assertNowhereOnDisk(t, dataDir, value)

	code, out, _ = runCLI(t, "tokens", "list", "--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "desk-app") || !strings.Contains(out, "desk") || strings.Contains(out, value) {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "tokens", "revoke", "desk-app", "--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "revoked desk-app") {
		t.Errorf("revoke: exit %d\n%s", code, out)
	}
	if _, err := st.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Check(value); err == nil {
		t.Error("the revoked token still checks")
	}
	code, out, _ = runCLI(t, "tokens", "list", "--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "no client tokens") {
		t.Errorf("list after revoke: exit %d\n%s", code, out)
	}
}

func TestTokensCommandErrors(t *testing.T) {
	cfgPath, _ := tokensConfig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "x"}, "--profile NAME (the config's profiles: desk, ro)"},
		{[]string{"create", "x", "--profile", "nope"}, "--profile nope: no such profile in the config (its profiles: desk, ro)"},
		{[]string{"create", "x", "--profile", "desk", "--expires", "soon"}, `--expires "soon"`},
		{[]string{"revoke", "ghost"}, "no client token has that name (see `mcproxy tokens list`)"},
	} {
		code, out, errOut := runCLI(t, append(append([]string{"tokens"}, c.args...), "--config", cfgPath)...)
		if code == exitOK || !strings.Contains(errOut, c.want) {
			t.Errorf("tokens %v: exit %d, stderr %q; want it to say %q (stdout %q)", c.args, code, errOut, c.want, out)
		}
	}
	code, out, _ := runCLI(t, "tokens", "help")
	if code != exitOK || !strings.Contains(out, "tokens create NAME --profile P") {
		t.Errorf("tokens help: %d %q", code, out)
	}
}

// assertNowhereOnDisk fails when any file under dir holds value.
func assertNowhereOnDisk(t *testing.T, dir, value string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), value) {
			t.Errorf("%s holds the token's value", p)
		}
		return nil
	})
}
