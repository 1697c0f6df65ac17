package upstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// installTimeout is the least time a stdio server launched by npx is given
// to start while npx's cache does not hold its package yet (issue 30): the
// first start downloads and installs it, which on an empty cache and a
// slow network takes longer than init_timeout's default, and npx killed
// mid-install can leave its cache half-installed for every later start.
const installTimeout = 5 * time.Minute

// initLimit is the limit on starting l: init_timeout, raised to
// installTimeout while npx installs the server's package (installing).
func (l *link) initLimit() limit {
	if l.init.d >= installTimeout || l.kind != config.TransportStdio || !installing(l.cfg, os.Getenv) {
		return l.init
	}
	return limit{installTimeout, l.init.setting + ", raised to " + installTimeout.String() +
		" while npx installs the server's package on its first start"}
}

// installing reports whether starting sc runs npx for a package that
// npx's cache (npm_config_cache, else ~/.npm) does not hold yet. It reads
// the cache only: a wrong guess costs a longer wait, never a failed start.
func installing(sc config.ServerConfig, getenv func(string) string) bool {
	if base := filepath.Base(sc.Command); base != "npx" && base != "npx.cmd" {
		return false
	}
	pkg := npxPackage(sc.Args)
	if pkg == "" {
		return false
	}
	env := func(k string) string {
		if v, ok := sc.Env[k]; ok {
			return v
		}
		return getenv(k)
	}
	cache := env("npm_config_cache")
	if cache == "" {
		cache = env("NPM_CONFIG_CACHE")
	}
	if cache == "" {
		home := env("HOME")
		if home == "" {
			return false
		}
		cache = filepath.Join(home, ".npm")
	}
	return !npxCached(filepath.Join(cache, "_npx"), pkg)
}

// npxPackage is the package npx args run: the value of --package/-p, else
// the first argument that is not a flag, without a version; "" when none.
func npxPackage(args []string) string {
	spec := ""
	for i := 0; i < len(args) && spec == ""; i++ {
		switch a := args[i]; {
		case a == "-p" || a == "--package":
			if i+1 < len(args) {
				spec = args[i+1]
			}
		case strings.HasPrefix(a, "--package="):
			spec = strings.TrimPrefix(a, "--package=")
		case a == "--" || strings.HasPrefix(a, "-"):
		default:
			spec = a
		}
	}
	// "@scope/name@1.2.3" and "name@latest" name the package before the
	// last "@" that is not the scope's.
	if i := strings.LastIndexByte(spec, '@'); i > 0 {
		spec = spec[:i]
	}
	return spec
}

// npxCached reports whether one of npx's install folders under dir holds
// pkg: each has a package.json whose dependencies name what it installed.
func npxCached(dir, pkg string) bool {
	manifests, _ := filepath.Glob(filepath.Join(dir, "*", "package.json"))
	for _, p := range manifests {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if json.Unmarshal(b, &m) == nil {
			if _, ok := m.Dependencies[pkg]; ok {
				if _, err := os.Stat(filepath.Join(filepath.Dir(p), "node_modules", filepath.FromSlash(pkg), "package.json")); err == nil {
					return true
				}
			}
		}
	}
	return false
}

// halfInstalledHint is what to do when npx, run for sc, found its cached
// install of the package broken: the shell cannot find the package's
// command ("sh: 1: mcp-server-memory: not found"), which an install cut
// short leaves behind, and which every later start repeats until the
// folder is gone. "" for anything else.
func halfInstalledHint(sc config.ServerConfig, stderr string) string {
	if base := filepath.Base(sc.Command); (base != "npx" && base != "npx.cmd") || !strings.Contains(stderr, ": not found") {
		return ""
	}
	return "; npx's cache holds a half-installed copy of " + orThePackage(npxPackage(sc.Args)) +
		", left by an install that was cut short: delete npx's cache folder (rm -rf ~/.npm/_npx, or _npx under" +
		" npm_config_cache) and mcproxy installs it again on its next retry"
}

func orThePackage(pkg string) string {
	if pkg == "" {
		return "the package"
	}
	return pkg
}
