package upstream

import (
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// minimalEnv names the variables of mcproxy's own environment that every
// stdio server inherits: enough to find programs (npx, uvx, node), a home,
// the user, the locale, a temporary directory and a terminal, and nothing
// that carries a secret. Everything else comes from the server's own env or
// its inherit_env (issue 16: a token given to one server must not reach
// another through the environment). LC_* and XDG_* variables match by
// prefix.
var minimalEnv = map[string][]string{
	"unix": {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "COLORTERM"},
	"windows": {"PATH", "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "USERPROFILE", "USERNAME",
		"HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)",
		"COMMONPROGRAMFILES", "TEMP", "TMP", "OS", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS"},
}

// minimalPrefixes are prefixes of inherited names on unix.
var minimalPrefixes = []string{"LC_", "XDG_"}

// childEnv is the environment of a stdio server's process: the minimal set of
// base (mcproxy's own, os.Environ's form), or all of it with inherit_env
// true, plus the names inherit_env lists, then the server's env on top.
func childEnv(base []string, s config.ServerConfig) []string {
	keep := func(string) bool { return true }
	if !s.InheritEnv.All {
		allowed := map[string]bool{}
		platform := "unix"
		if runtime.GOOS == "windows" {
			platform = "windows"
		}
		for _, k := range minimalEnv[platform] {
			allowed[k] = true
		}
		for _, k := range s.InheritEnv.Names {
			allowed[envKey(k)] = true
		}
		keep = func(k string) bool {
			if allowed[envKey(k)] {
				return true
			}
			return platform == "unix" && slices.ContainsFunc(minimalPrefixes, func(p string) bool { return strings.HasPrefix(k, p) })
		}
	}
	inherited := make([]string, 0, len(base))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); keep(k) {
			inherited = append(inherited, kv)
		}
	}
	return mergeEnv(inherited, s.Env)
}

// envKey is a variable name as the platform compares it: Windows ignores
// case.
func envKey(k string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(k)
	}
	return k
}

// mergeEnv returns base with extra's variables added or replacing those of
// the same name, extra's in sorted order. base is not modified.
func mergeEnv(base []string, extra map[string]string) []string {
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, overridden := extra[k]; !overridden {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}
