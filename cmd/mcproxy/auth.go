package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/oauth"
)

const authUsage = `Usage:
  mcproxy auth login SERVER [--config F] [--no-browser]
  mcproxy auth status [--config F]
  mcproxy auth logout SERVER [--config F]

login   Signs in to SERVER (a url server of the config that requires OAuth):
        opens the sign-in page in the browser ($BROWSER, else xdg-open/open;
        with --no-browser or without one it prints the URL to open), waits
        for the redirect on a loopback port, and stores the tokens under
        <data_dir>/oauth/SERVER.json (mode 0600), or with "store":
        {"postgres": ...} in the database the replicas share. A running
        mcproxy picks them up within a second. Servers set to the client_credentials
        grant get their token at once.
status  Lists the url servers and what is stored for each (never a token).
logout  Deletes SERVER's stored tokens and client registration.
`

// runAuth is `mcproxy auth`.
func runAuth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, authUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub := args[0]
	fs := newFlagSet("auth "+sub, "auth "+sub+" [SERVER] [--config F]", stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "config file")
	noBrowser := fs.Bool("no-browser", false, "print the sign-in URL instead of opening a browser")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return flagError(stderr, fs, err)
	}
	cfg, err := loadConfig(*configPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	// With a shared store the tokens are there, for every replica.
	shared, err := openSharedStore(cfg, zap.NewNop())
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	if shared != nil {
		defer shared.Close()
	}
	st, where := oauthStore(cfg, shared)
	switch sub {
	case "status":
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "mcproxy auth status takes no SERVER\n\n%s", authUsage)
			return exitUsage
		}
		return authStatus(cfg, st, stdout, stderr)
	case "login", "logout":
		if len(pos) != 1 {
			fmt.Fprintf(stderr, "mcproxy auth %s needs one SERVER\n\n%s", sub, authUsage)
			return exitUsage
		}
		c, code := authClient(cfg, st, pos[0], stderr)
		if c == nil {
			return code
		}
		defer c.Close()
		if sub == "logout" {
			if err := c.Logout(); err != nil {
				fmt.Fprintf(stderr, "mcproxy: signing out of %s: %v\n", pos[0], err)
				return exitError
			}
			fmt.Fprintf(stdout, "Signed out of %s: its stored tokens are deleted.\n", pos[0])
			return exitOK
		}
		code = authLogin(ctx, c, *noBrowser, where(pos[0]), stdout, stderr)
		if code == exitOK && hasHeader(cfg.MCPServers[pos[0]].Headers, "Authorization") {
			fmt.Fprintf(stderr, "Note: mcpServers.%s.headers sets Authorization, which mcproxy sends instead of the tokens: remove it to use the sign-in.\n", pos[0])
		}
		return code
	}
	fmt.Fprintf(stderr, "mcproxy auth: unknown command %q\n\n%s", sub, authUsage)
	return exitUsage
}

// authClient is the OAuth client of one configured url server.
func authClient(cfg *config.Config, st oauth.Store, name string, stderr io.Writer) (*oauth.Client, int) {
	sc, ok := cfg.MCPServers[name]
	if problems := cfg.Broken[name]; problems != "" {
		fmt.Fprintf(stderr, "mcproxy: server %q is not usable until its config entry is fixed: %s\n", name, problems)
		return nil, exitError
	}
	if !ok {
		fmt.Fprintf(stderr, "mcproxy: no server %q in the config (configured: %s)\n", name, strings.Join(slices.Sorted(maps.Keys(cfg.MCPServers)), ", "))
		return nil, exitUsage
	}
	if sc.URL == "" {
		fmt.Fprintf(stderr, "mcproxy: %q is a stdio server (command); only url servers sign in\n", name)
		return nil, exitUsage
	}
	c, err := oauth.New(name, sc, oauth.Options{Store: st})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return nil, exitError
	}
	return c, exitOK
}

func authLogin(ctx context.Context, c *oauth.Client, noBrowser bool, where string, stdout, stderr io.Writer) int {
	var open func(context.Context, string) error
	if !noBrowser {
		open = oauth.SystemOpener()
	}
	show := func(u string) {
		if open != nil {
			fmt.Fprintf(stderr, "Opening the sign-in page for %s in the browser; if it does not open, visit:\n\n  %s\n\n", c.Name(), u)
		} else {
			fmt.Fprintf(stderr, "To sign in to %s, open this URL in a browser on this machine:\n\n  %s\n\n", c.Name(), u)
		}
		fmt.Fprintln(stderr, "Waiting for the sign-in to come back...")
	}
	if err := c.Login(ctx, show, open); err != nil {
		if errors.Is(err, oauth.ErrNoSignIn) {
			fmt.Fprintf(stdout, "%s does not ask for a sign-in; nothing to do.\n", c.Name())
			return exitOK
		}
		fmt.Fprintf(stderr, "mcproxy: signing in to %s: %v\n", c.Name(), err)
		return exitError
	}
	st := c.Status()
	fmt.Fprintf(stdout, "Signed in to %s%s. Tokens are stored in %s; a running mcproxy connects within a second.\n",
		c.Name(), describeScopes(st.Scopes), where)
	return exitOK
}

func authStatus(cfg *config.Config, store oauth.Store, stdout, stderr io.Writer) int {
	names := slices.Sorted(maps.Keys(cfg.MCPServers))
	listed := false
	for _, name := range names {
		sc := cfg.MCPServers[name]
		if sc.URL == "" {
			continue
		}
		listed = true
		c, err := oauth.New(name, sc, oauth.Options{Store: store})
		if err != nil {
			fmt.Fprintf(stdout, "%-20s %s  config error: %v\n", name, maskURL(sc.URL), err)
			continue
		}
		st := c.Status()
		c.Close()
		var what string
		switch {
		case hasHeader(sc.Headers, "Authorization"):
			what = "static Authorization header (from the config)"
		case !st.SignedIn:
			what = "not signed in (mcproxy auth login " + name + " if the server needs it)"
		default:
			what = "signed in" + describeScopes(st.Scopes)
			if !st.Expiry.IsZero() {
				if d := time.Until(st.Expiry); d > 0 {
					what += fmt.Sprintf(", access token expires in %s", d.Round(time.Second))
				} else {
					what += ", access token expired"
				}
			}
			if st.Refreshing {
				what += ", refresh token stored"
			}
		}
		fmt.Fprintf(stdout, "%-20s %s  %s\n", name, maskURL(sc.URL), what)
	}
	if !listed {
		fmt.Fprintln(stdout, "no url servers in the config")
	}
	return exitOK
}

func describeScopes(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return " (scopes: " + strings.Join(s, " ") + ")"
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// maskURL drops the query string and user info, which may carry secrets.
func maskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
