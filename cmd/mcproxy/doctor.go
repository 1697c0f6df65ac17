package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/importer"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Check outcomes, as doctor prints them.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "FAIL"
)

// check is one line of doctor's report: what was checked, how it went,
// what was found and, unless ok, how to fix it.
type check struct {
	Name   string `json:"check"`
	Result string `json:"result"` // checkOK, checkWarn or checkFail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorDialTimeout bounds each reachability probe (embeddings, gateway).
const doctorDialTimeout = 5 * time.Second

// runDoctor checks a setup end to end (issue 30) and prints one line per
// check; it exits 1 when a check FAILs. It changes nothing: servers are
// started only to list their tools, and the reachability probes open a TCP
// connection and send nothing, so no credential leaves the machine.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("doctor", "doctor [flags]", stderr)
	cfgPath := flags.String("config", config.DefaultConfigPath(), "config file")
	asJSON := flags.Bool("json", false, "print the checks as a JSON array")
	timeout := flags.Duration("timeout", 0, "how long each server may take to start and list its tools (default: its init_timeout)")
	pos, err := parseInterleaved(flags, args)
	if err != nil {
		return flagError(stderr, flags, err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mcproxy doctor: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	var checks []check
	add := func(c check) { checks = append(checks, c) }
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		add(check{"config", checkFail, oneLine(err.Error()), "fix the file as the error says; mcproxy serve refuses it"})
	} else {
		checkConfig(cfg, *cfgPath, add)
		// Before the servers start: starting them creates the data dir.
		checkDataDir(cfg.DataDir, add)
		checkServers(ctx, *cfgPath, *timeout, add)
		checkEmbeddings(ctx, cfg, add)
		checkGateway(ctx, cfg, add)
	}
	checkClients(*cfgPath, add)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(checks)
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-4s  %s: %s", c.Result, c.Name, c.Detail)
			if c.Fix != "" {
				line += " (fix: " + c.Fix + ")"
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if slices.ContainsFunc(checks, func(c check) bool { return c.Result == checkFail }) {
		return exitError
	}
	return exitOK
}

// checkConfig reports the file and each server set aside for its entry's
// problems.
func checkConfig(cfg *config.Config, path string, add func(check)) {
	enabled := 0
	for _, s := range cfg.MCPServers {
		if s.IsEnabled() {
			enabled++
		}
	}
	if abs, err := filepath.Abs(config.ExpandHome(path)); err == nil {
		path = abs
	}
	detail := fmt.Sprintf("%s parses: %d servers enabled, %d set aside", path, enabled, len(cfg.Broken))
	if enabled == 0 {
		add(check{"config", checkWarn, detail, "mcproxy add NAME -- COMMAND, or mcproxy import CLIENT"})
	} else {
		add(check{"config", checkOK, detail, ""})
	}
	for _, name := range sortedKeys(cfg.Broken) {
		add(check{"server " + name, checkFail, "misconfigured, not started: " + oneLine(cfg.Broken[name]), "fix mcpServers." + name + " in the config as the problem says"})
	}
}

// checkServers starts every enabled server as `mcproxy list` does and
// reports whether each listed its tools.
func checkServers(ctx context.Context, path string, timeout time.Duration, add func(check)) {
	_, st, done, ok := oneShotStack(ctx, path, "error", io.Discard, func(c *config.Config) {
		if timeout > 0 {
			c.InitTimeout = config.Duration(timeout)
			for n, s := range c.MCPServers {
				s.InitTimeout = config.Duration(timeout)
				c.MCPServers[n] = s
			}
		}
	})
	if !ok {
		add(check{"servers", checkFail, "could not start the servers", "run `mcproxy list` to see why"})
		return
	}
	defer done()
	for _, s := range st.status() {
		switch s.State {
		case upstream.StateReady:
			add(check{"server " + s.Server, checkOK, fmt.Sprintf("started, %d tools", s.Tools), ""})
		case upstream.StateDisabled, upstream.StateMisconfigured: // skipped; the config check names the latter
		case upstream.StateNeedsSignIn:
			add(check{"server " + s.Server, checkWarn, "needs sign-in: " + oneLine(s.LastError), "mcproxy auth login " + s.Server})
		default:
			add(check{"server " + s.Server, checkFail, string(s.State) + ": " + oneLine(s.LastError),
				"make its command or url work (try it alone), or give it more time with init_timeout or doctor --timeout"})
		}
	}
}

// checkDataDir checks that the data dir is private: it holds transcripts,
// tokens and the index.
func checkDataDir(dir string, add func(check)) {
	dir = config.ExpandHome(dir)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add(check{"data dir", checkWarn, dir + " does not exist yet", "mcproxy serve creates it (0700)"})
		return
	case err != nil:
		add(check{"data dir", checkFail, oneLine(err.Error()), "make " + dir + " readable by this user"})
		return
	case !info.IsDir():
		add(check{"data dir", checkFail, dir + " is not a directory", "move it away or set data_dir"})
		return
	}
	if runtime.GOOS == "windows" { // no Unix modes to check
		add(check{"data dir", checkOK, dir, ""})
		return
	}
	perm := info.Mode().Perm()
	switch {
	case perm&0o022 != 0:
		add(check{"data dir", checkFail, fmt.Sprintf("%s is %#o: other users can write to it", dir, perm), "chmod 700 " + dir})
	case perm&0o077 != 0:
		add(check{"data dir", checkWarn, fmt.Sprintf("%s is %#o: other users can read it", dir, perm), "chmod 700 " + dir})
	default:
		add(check{"data dir", checkOK, fmt.Sprintf("%s is %#o", dir, perm), ""})
	}
}

// checkEmbeddings probes the embeddings endpoint when one is configured.
func checkEmbeddings(ctx context.Context, cfg *config.Config, add func(check)) {
	if !cfg.Embeddings.IsEnabled() || cfg.Embeddings.URL == "" {
		return
	}
	if err := reachable(ctx, cfg.Embeddings.URL); err != nil {
		add(check{"embeddings", checkFail, err.Error(), "start the embeddings server or fix embeddings.url"})
		return
	}
	add(check{"embeddings", checkOK, redactedURL(cfg.Embeddings.URL) + " answers", ""})
}

// checkGateway probes each provider the gateway forwards to.
func checkGateway(ctx context.Context, cfg *config.Config, add func(check)) {
	if !cfg.Gateway.Enabled {
		return
	}
	for _, p := range []struct{ key, base, def string }{
		{"anthropic", cfg.Gateway.Anthropic.BaseURL, config.DefaultAnthropicBaseURL},
		{"openai", cfg.Gateway.OpenAI.BaseURL, config.DefaultOpenAIBaseURL},
	} {
		base := p.base
		if base == "" {
			base = p.def
		}
		name := "gateway " + p.key
		if err := reachable(ctx, base); err != nil {
			add(check{name, checkFail, err.Error(), "check the network, or fix gateway." + p.key + ".base_url"})
			continue
		}
		add(check{name, checkOK, redactedURL(base) + " resolves and accepts connections", ""})
	}
}

// redactedURL is rawURL with any password masked, for output: a URL in
// the config may carry credentials.
func redactedURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "(a URL that does not parse)"
}

// reachable resolves rawURL's host and opens a TCP connection to it,
// sending nothing.
func reachable(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", redactedURL(rawURL))
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	ctx, cancel := context.WithTimeout(ctx, doctorDialTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return fmt.Errorf("%s is not reachable: %w", u.Redacted(), err)
	}
	return conn.Close()
}

// checkClients reads each MCP client's file that exists and says whether
// it launches this mcproxy, as `mcproxy setup` writes it.
func checkClients(cfgPath string, add func(check)) {
	want, err := filepath.Abs(config.ExpandHome(cfgPath))
	if err != nil {
		want = cfgPath
	}
	defaultCfg, _ := filepath.Abs(config.ExpandHome(config.DefaultConfigPath()))
	ws, _ := workspaceDir("")
	found := false
	for _, client := range importer.Clients {
		path, err := importer.ClientPath(client, clientEnv(ws))
		if err != nil {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		found = true
		name := "client " + client
		if err != nil {
			add(check{name, checkFail, oneLine(err.Error()), "make " + path + " readable"})
			continue
		}
		list, others, err := importer.Launchers(data)
		if err != nil {
			add(check{name, checkFail, fmt.Sprintf("%s: %v", path, err), "fix the file's JSON, then mcproxy setup " + client})
			continue
		}
		if len(list) == 0 {
			add(check{name, checkWarn, fmt.Sprintf("%s does not launch mcproxy (%d servers of its own)", path, others), "mcproxy setup " + client})
			continue
		}
		l := list[0]
		runs := l.Config
		if runs == "" {
			runs = defaultCfg
		} else if abs, err := filepath.Abs(config.ExpandHome(runs)); err == nil {
			runs = abs
		}
		switch {
		case runs != want:
			add(check{name, checkWarn, fmt.Sprintf("%s launches mcproxy with another config, %s", path, runs), "mcproxy setup " + client + " --config " + cfgPath})
		case !executable(l.Command):
			add(check{name, checkFail, fmt.Sprintf("%s launches %s, which is not there", path, l.Command), "mcproxy setup " + client + " again (it writes this mcproxy's path)"})
		default:
			detail := fmt.Sprintf("%s launches this mcproxy (%s)", path, l.Command)
			if others > 0 {
				detail += fmt.Sprintf(", beside %d servers of its own", others)
			}
			add(check{name, checkOK, detail, ""})
		}
	}
	if !found {
		add(check{"clients", checkWarn, "no MCP client's file found", "mcproxy setup " + strings.Join(importer.Clients, "|")})
	}
}

// executable reports whether command names a program: a path that exists,
// or a name on PATH.
func executable(command string) bool {
	if strings.ContainsRune(command, os.PathSeparator) {
		return fileExists(command)
	}
	_, err := exec.LookPath(command)
	return err == nil
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
