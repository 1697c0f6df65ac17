package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
)

const tokensUsage = `Usage:
  mcproxy tokens create NAME --profile P [--profile Q] [--expires 30d] [--config F]
  mcproxy tokens list [--config F]
  mcproxy tokens revoke NAME [--config F]

Client tokens are bearer tokens for one or more profiles ("profiles" in the
config): a client sending one reaches only those profiles' endpoints
(/mcp/p/<profile>, /sse/p/<profile>) and sees only their tools. create prints
the token once, alone on the last line; mcproxy keeps only its SHA-256, in
<data_dir>/tokens.json (0600), or with "store": {"postgres": ...} in the
database every replica shares. A running mcproxy (every replica) sees a
create or a revoke within a second, without restarting. --expires takes days (30d) or a Go
duration (12h); without it the token never expires. auth_token stays the admin
token for every profile.
`

// profileList is a repeatable --profile flag.
type profileList []string

func (p *profileList) String() string { return strings.Join(*p, ",") }
func (p *profileList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*p = append(*p, s)
		}
	}
	return nil
}

func runTokens(args []string, stdout, stderr io.Writer) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub == "help" || (len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0])) {
		fmt.Fprint(stdout, tokensUsage)
		return exitOK
	}
	want := map[string]int{"create": 1, "list": 0, "revoke": 1}
	n, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "mcproxy tokens: unknown subcommand %q\n\n%s", sub, tokensUsage)
		return exitUsage
	}
	fs := newFlagSet("tokens "+sub, "tokens "+sub+" [NAME] [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir and profiles)")
	var profiles profileList
	expires := ""
	if sub == "create" {
		fs.Var(&profiles, "profile", "a profile the token may use (repeat, or separate with commas)")
		fs.StringVar(&expires, "expires", "", "when the token stops working: days (`30d`), a duration (12h) or never")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) != n {
		fmt.Fprintf(stderr, "mcproxy tokens %s: wrong number of arguments %q\n\n%s", sub, pos, tokensUsage)
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	// With a shared store the tokens are there, for every replica.
	shared, err := openSharedStore(cfg, zap.NewNop())
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy tokens: %v\n", err)
		return exitError
	}
	if shared != nil {
		defer shared.Close()
	}
	st, err := openTokens(cfg, shared, zap.NewNop())
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy tokens: %v\n", err)
		return exitError
	}
	ctx := context.Background()
	switch sub {
	case "create":
		err = createToken(ctx, stdout, cfg, st, pos[0], profiles, expires)
	case "list":
		err = listTokens(ctx, stdout, st)
	case "revoke":
		if err = st.Revoke(ctx, pos[0]); err == nil {
			fmt.Fprintf(stdout, "revoked %s; a running mcproxy refuses it within a second\n", pos[0])
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy tokens %s: %v\n", sub, err)
		return exitError
	}
	return exitOK
}

func createToken(ctx context.Context, w io.Writer, cfg *config.Config, st clienttoken.Store, name string, profiles []string, expires string) error {
	if len(profiles) == 0 {
		return fmt.Errorf("give the profile the token is for: --profile NAME (the config's profiles: %s)", profileNames(cfg))
	}
	for _, p := range profiles {
		if _, ok := cfg.Profiles[p]; !ok {
			return fmt.Errorf("--profile %s: no such profile in the config (its profiles: %s)", p, profileNames(cfg))
		}
	}
	exp, err := clienttoken.ParseExpiry(expires, time.Now())
	if err != nil {
		return err
	}
	value, t, err := st.Create(ctx, name, profiles, exp)
	if err != nil {
		return err
	}
	when := "never expires"
	if !t.Expires.IsZero() {
		when = "expires " + t.Expires.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "created client token %s for profile(s) %s; it %s.\n", t.Name, strings.Join(t.Profiles, ", "), when)
	fmt.Fprintf(w, "It is shown only now: copy it into the client (Authorization: Bearer <token>).\n")
	fmt.Fprintln(w, value)
	return nil
}

func profileNames(cfg *config.Config) string {
	if len(cfg.Profiles) == 0 {
		return `none; add "profiles" to the config first`
	}
	names := make([]string, 0, len(cfg.Profiles))
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func listTokens(ctx context.Context, w io.Writer, st clienttoken.Store) error {
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no client tokens (mcproxy tokens create NAME --profile P makes one)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROFILES\tCREATED\tEXPIRES")
	now := time.Now()
	for _, t := range list {
		exp := "never"
		if !t.Expires.IsZero() {
			exp = t.Expires.Format(time.RFC3339)
			if t.Expired(now) {
				exp += " (expired)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, strings.Join(t.Profiles, ","), t.Created.Format(time.RFC3339), exp)
	}
	return tw.Flush()
}
