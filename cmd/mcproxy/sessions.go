package main

import (
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

const sessionsUsage = `Usage:
  mcproxy sessions list                 [--config F]
  mcproxy sessions show ID              [--config F]
  mcproxy sessions archive ID BLOCK|REF [--config F]
  mcproxy sessions rebuild ID           [--config F]

list     Every noa session under <data_dir>/sessions, most recent first, with
         its messages, blocks and tokens saved.
show     One session: its files, whether state.json matches the transcript,
         and every block with its tier, span, tokens and archive path.
archive  Print the archived original of a block (e.g. b3) or of one message
         (e.g. m00042), verbatim, to stdout.
rebuild  Rebuild a session's state from its transcript alone, recreate any
         missing block archive from it, and rewrite state.json. Run it while
         no mcproxy is serving that session.

Session ids are the directory names list prints: a client's Mcp-Session-Id
over HTTP, stdio-<start time>-<random> for a stdio run.
`

// sessionOptions is what the server runs a session host with for cfg: the
// sessions directory, noa's configuration and the configured tokenizer, so
// the CLI counts and replays exactly as the server did. The warnings are
// noa's about its configuration.
func sessionOptions(cfg *config.Config) (session.Options, []string, error) {
	counter, err := tokens.New(cfg.Tokenizer)
	if err != nil {
		return session.Options{}, nil, &config.FieldError{Path: "tokenizer", Message: err.Error()}
	}
	c := *cfg
	c.DataDir = config.ExpandHome(cfg.DataDir)
	opts, warnings := session.OptionsFrom(&c, counter.Count)
	return opts, warnings, nil
}

// newSessions makes the session manager for serve, nil when noa is off.
// noa's configuration warnings are logged; they never stop the proxy.
func newSessions(cfg *config.Config, log *zap.Logger) (*session.Manager, error) {
	if !cfg.Noa.IsEnabled() {
		log.Info("noa is off (noa.enabled is false): tool results pass through without ref tags, nudges or size cuts")
		return nil, nil
	}
	opts, warnings, err := sessionOptions(cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.Warn("noa configuration", zap.String("warning", w))
	}
	opts.Logger = log.Named("session")
	log.Info("noa is on", zap.String("sessions", opts.Dir), zap.Int("context_limit", cfg.Noa.ContextLimit),
		zap.Int("max_result_tokens", cfg.Noa.MaxResultTokens), zap.String("tokenizer", cfg.Tokenizer))
	return session.NewManager(opts), nil
}

func runSessions(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		w := stderr
		code := exitUsage
		if len(args) > 0 {
			w, code = stdout, exitOK
		}
		fmt.Fprint(w, sessionsUsage)
		return code
	}
	sub, rest := args[0], args[1:]
	want := map[string][]string{
		"list":    nil,
		"show":    {"ID"},
		"archive": {"ID", "BLOCK"},
		"rebuild": {"ID"},
	}
	names, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "mcproxy sessions: unknown subcommand %q\n\n%s", sub, sessionsUsage)
		return exitUsage
	}
	synopsis := strings.TrimSpace("sessions " + sub + " " + strings.Join(names, " ") + " [flags]")
	fs := newFlagSet("sessions "+sub, synopsis, stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir, tokenizer and noa settings)")
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) != len(names) {
		if len(names) == 0 {
			fmt.Fprintf(stderr, "mcproxy sessions %s: takes no arguments, got %q\n", sub, pos)
		} else {
			fmt.Fprintf(stderr, "mcproxy sessions %s: want %s, got %d argument(s); `mcproxy sessions list` shows the session ids\n",
				sub, strings.Join(names, " "), len(pos))
		}
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	opts, _, err := sessionOptions(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	switch sub {
	case "list":
		err = session.List(stdout, opts)
	case "show":
		err = session.Show(stdout, opts, pos[0])
	case "archive":
		err = session.Archive(stdout, opts, pos[0], pos[1])
	case "rebuild":
		err = session.Rebuild(stdout, opts, pos[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy sessions %s: %v\n", sub, err)
		return exitError
	}
	return exitOK
}
