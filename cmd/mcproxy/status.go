package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// localBase is the base URL this machine reaches an mcproxy listening on
// addr at.
func localBase(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// fetchStatus reads /status from the first of addrs where an mcproxy
// answers, and returns which one that was.
func fetchStatus(ctx context.Context, cfg *config.Config, addrs []string) (*dashboard.Status, string, error) {
	var errs []error
	for _, addr := range addrs {
		st, err := fetchStatusAt(ctx, cfg, addr)
		if err == nil {
			return st, addr, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, "", fmt.Errorf("%w (start one with `mcproxy serve`, or name its address with --listen)", errs[0])
	}
	return nil, "", fmt.Errorf("no mcproxy answers at %s (start one with `mcproxy serve`, or name its address with --listen): %w",
		strings.Join(addrs, ", "), errors.Join(errs...))
}

// fetchStatusAt reads /status from the mcproxy listening on addr.
func fetchStatusAt(ctx context.Context, cfg *config.Config, addr string) (*dashboard.Status, error) {
	base, err := localBase(addr)
	if err != nil {
		return nil, err
	}
	url := base + dashboard.PathStatus
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if cfg.AuthToken != "" {
		req.Header.Set(authheader.Token, cfg.AuthToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no mcproxy answers at %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var st dashboard.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	return &st, nil
}

// runStatus prints what a running mcproxy reports; runServers lists the
// configured servers with their live state when an mcproxy runs. Both exit
// 1 while a server is down or misconfigured or a config change was refused.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer, servers bool) int {
	name := "status"
	if servers {
		name = "servers"
	}
	fs := newFlagSet(name, name+" [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for listen and auth_token)")
	asJSON := fs.Bool("json", false, "print /status as JSON")
	var addr string
	for _, f := range []string{"listen", "addr"} {
		fs.StringVar(&addr, f, "", "the address of the mcproxy to ask, as given to serve --listen (default: the one serving this config, else its listen)")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mcproxy %s: unexpected argument %q\n", name, pos[0])
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	refusedFile := err != nil
	if err != nil {
		// A running mcproxy keeps its configuration when an edit is
		// refused; it is the one to ask what is wrong, so find it with
		// what can still be read of the file.
		rough, ok := roughConfig(*cfgPath)
		if !ok {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stderr, "mcproxy %s: the config file has problems (%v); asking the running mcproxy\n", name, oneLine(err.Error()))
		cfg = rough
	}
	addrs := candidateAddrs(cfg, *cfgPath)
	if addr != "" {
		addrs = []string{flagAddr(addr)}
	}
	st, at, err := fetchStatus(ctx, cfg, addrs)
	if err != nil && !servers {
		fmt.Fprintf(stderr, "mcproxy status: %v\n", err)
		return exitError
	}
	if *asJSON && st != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
		return exitOK
	}
	live := map[string]dashboard.Server{}
	if st != nil {
		fmt.Fprintf(stdout, "mcproxy %s at %s, up %s; %d tools indexed; %d session(s)\n", st.Version, at,
			time.Duration(st.UptimeSeconds)*time.Second, st.IndexSize, len(st.Sessions))
		if base, err := localBase(at); err == nil {
			fmt.Fprintf(stdout, "dashboard: %s\n", dashboardLink(base, cfg.AuthToken != ""))
		}
		if r := st.RefusedReload; r != nil {
			fmt.Fprintf(stdout, "config change refused at %s; the running configuration stays until %s is fixed and saved: %s\n",
				r.Time.Local().Format(time.DateTime), r.Config, oneLine(r.Error))
		}
		for _, s := range st.Servers {
			live[s.Name] = s
		}
		for _, s := range st.Sessions {
			if r := s.Recording; r != nil {
				// Calls of this session are not recorded (issue 26).
				fmt.Fprintf(stdout, "session %s is not recording since %s: %s\n", s.ID, r.Since.Local().Format(time.DateTime), oneLine(r.LastError))
			}
		}
	} else {
		fmt.Fprintf(stdout, "not running (%v); the states below are the config's\n", err)
	}
	names := make([]string, 0, len(cfg.MCPServers)+len(cfg.Broken))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	for n := range cfg.Broken {
		names = append(names, n)
	}
	if !servers || refusedFile { // the file's servers are unknown: show the running ones
		names = names[:0]
		for n := range live {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTOOLS\tUP FOR\tLAST ERROR")
	down := 0
	for _, n := range names {
		s, ok := live[n]
		switch {
		case ok:
		case cfg.Broken[n] != "":
			s = dashboard.Server{State: string(upstream.StateMisconfigured), LastError: cfg.Broken[n]}
		case !cfg.MCPServers[n].IsEnabled():
			s = dashboard.Server{State: "disabled"}
		case st != nil:
			s = dashboard.Server{State: "not loaded yet (the running mcproxy has not applied this config)"}
		default:
			s = dashboard.Server{State: "configured"}
		}
		if s.State == string(upstream.StateDown) || s.State == string(upstream.StateMisconfigured) {
			down++
		}
		up := ""
		if s.UptimeSeconds > 0 {
			up = (time.Duration(s.UptimeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", n, s.State, s.ToolCount, up, oneLine(s.LastError))
	}
	_ = tw.Flush()
	if down > 0 || (st != nil && st.RefusedReload != nil) {
		return exitError
	}
	return exitOK
}

// roughConfig reads only listen, data_dir and auth_token of the file at
// path, for finding a running mcproxy when the file as a whole is refused;
// ok is false when not even that much can be read.
func roughConfig(path string) (_ *config.Config, ok bool) {
	data, err := os.ReadFile(config.ExpandHome(path))
	if err != nil {
		return nil, false
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil {
		return nil, false
	}
	str := func(key string) string {
		var v string
		if json.Unmarshal(raw[key], &v) != nil {
			return ""
		}
		v, _ = config.ExpandEnv(v)
		return v
	}
	cfg := &config.Config{Listen: str("listen"), DataDir: str("data_dir"), AuthToken: str("auth_token")}
	cfg.ApplyDefaults()
	return cfg, true
}

// dashboardLink is how to open the dashboard at base: with auth_token set,
// in the URL fragment, which the browser sends nowhere and the page reads.
// The token itself is left for the user to fill in, so it never lands in a
// terminal's scrollback or a captured output.
func dashboardLink(base string, auth bool) string {
	if auth {
		return base + "/#token=<auth_token>"
	}
	return base + "/"
}
