package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/activity"
	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/server"
)

// activityFile is where cfg keeps the call history.
func activityFile(cfg *config.Config) string {
	return filepath.Join(config.ExpandHome(cfg.DataDir), config.ActivityFile)
}

// activityOptions are the history's options from cfg.
func activityOptions(cfg *config.Config, log *zap.Logger) activity.Options {
	return activity.Options{MaxAge: cfg.Activity.RetentionPeriod(), MaxEntries: cfg.Activity.Entries(),
		Mask: redactor(cfg, false).String, Logger: log}
}

// openActivity opens the call history of a serving mcproxy; nil (and no
// error) when activity.enabled is false.
func openActivity(cfg *config.Config, log *zap.Logger) (*activity.Log, error) {
	if !cfg.Activity.IsEnabled() {
		return nil, nil
	}
	l, err := activity.Open(activityFile(cfg), activityOptions(cfg, log.Named("activity")))
	if err != nil {
		return nil, fmt.Errorf("%w (set \"activity\": {\"enabled\": false} to keep no call history)", err)
	}
	return l, nil
}

// activityEntry is the history's entry for a call through the front: its
// arguments as JSON (the client's bytes when known, an excerpt of them), masked
// and cut by the Log.
func activityEntry(c server.Call) activity.Entry {
	args := ""
	switch {
	case len(c.Arguments) == 0:
	case len(c.ArgumentsJSON) > 0:
		args = activity.Excerpt(c.ArgumentsJSON)
	default:
		if b, err := json.Marshal(c.Arguments); err == nil {
			args = string(b)
		}
	}
	token := c.Token
	if token == "" && c.Admin {
		token = clientauth.LabelAdmin
	}
	return activity.Entry{Time: c.Time, Session: c.Session, Client: c.Client, Token: token, Server: c.Server, Tool: c.Tool,
		DurationMS: float64(c.Duration.Microseconds()) / 1000, Error: c.Error, Arguments: args}
}

func runActivity(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("activity", "activity [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir and activity)")
	srv := fs.String("server", "", "only calls to this server")
	tool := fs.String("tool", "", "only calls to this tool (its name, or SERVER:TOOL)")
	sess := fs.String("session", "", "only calls of this client session")
	tok := fs.String("token", "", "only calls made with this client token (its name; (admin) for auth_token)")
	errs := fs.Bool("errors", false, "only calls that failed")
	limit := fs.Int("limit", 50, "print at most this many calls (0: all that are kept)")
	asJSON := fs.Bool("json", false, "print JSON lines, newest first")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mcproxy activity: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *limit < 0 {
		fmt.Fprintln(stderr, "mcproxy activity: --limit must not be negative")
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	f := activity.Filter{Server: *srv, Tool: *tool, Session: *sess, Token: *tok, Errors: *errs}
	if s, t, ok := config.SplitToolID(*tool); ok && f.Server == "" {
		f.Server, f.Tool = s, t
	}
	list, err := activity.Read(activityFile(cfg), f, *limit, activityOptions(cfg, nil))
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy activity: %v\n", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range list {
			_ = enc.Encode(e)
		}
		return exitOK
	}
	if !cfg.Activity.IsEnabled() {
		fmt.Fprintln(stdout, `the call history is off ("activity": {"enabled": false}); what is listed below was kept before`)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no calls kept (%s keeps the last %d, at most %s old: activity.max_entries and activity.retention)\n",
			activityFile(cfg), cfg.Activity.Entries(), retentionText(cfg.Activity.RetentionPeriod()))
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCLIENT\tTOKEN\tSESSION\tTOOL\tDURATION\tRESULT")
	for _, e := range list {
		result := "ok"
		if !e.OK() {
			result = "error: " + oneLine(e.Error)
		}
		client := e.Client
		if client == "" {
			client = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s:%s\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"), client, orDash(e.Token), orDash(e.Session),
			e.Server, e.Tool, durationText(e.DurationMS), result)
	}
	_ = tw.Flush()
	if *limit > 0 && len(list) == *limit {
		fmt.Fprintf(stdout, "(the %d newest shown; --limit 0 shows all that are kept)\n", *limit)
	}
	return exitOK
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// durationText is a call's duration for people: "850µs", "12ms", "1.4s".
func durationText(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// retentionText is a retention period for people: "7 days", "36h0m0s",
// "no age limit".
func retentionText(d time.Duration) string {
	switch {
	case d <= 0:
		return "any age"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
