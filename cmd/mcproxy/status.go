package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// localBase is the base URL this machine reaches the mcproxy serving cfg
// at.
func localBase(cfg *config.Config) (string, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// fetchStatus reads /status from the mcproxy serving cfg.
func fetchStatus(ctx context.Context, cfg *config.Config) (*dashboard.Status, error) {
	base, err := localBase(cfg)
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
		return nil, fmt.Errorf("no mcproxy answers at %s (start one with `mcproxy serve`): %w", url, err)
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
// configured servers with their live state when an mcproxy runs.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer, servers bool) int {
	name := "status"
	if servers {
		name = "servers"
	}
	fs := newFlagSet(name, name+" [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for listen and auth_token)")
	asJSON := fs.Bool("json", false, "print /status as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mcproxy %s: unexpected argument %q\n", name, pos[0])
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	st, err := fetchStatus(ctx, cfg)
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
		fmt.Fprintf(stdout, "mcproxy %s at %s, up %s; %d tools indexed; %d session(s)\n", st.Version, cfg.Listen,
			time.Duration(st.UptimeSeconds)*time.Second, st.IndexSize, len(st.Sessions))
		if base, err := localBase(cfg); err == nil {
			fmt.Fprintf(stdout, "dashboard: %s\n", dashboardLink(base, cfg.AuthToken != ""))
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
	if !servers {
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
	if down > 0 {
		return exitError
	}
	return exitOK
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
