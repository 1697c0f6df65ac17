package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/pgstore"
)

const toolsUsage = `Usage:
  mcproxy tools list                    [--config F | --data-dir D]
  mcproxy tools diff [SERVER[:TOOL]]    [--config F | --data-dir D]
  mcproxy tools approve SERVER[:TOOL]   [--config F | --data-dir D]

mcproxy hashes every upstream tool's definition (name, title, description,
schemas, annotations). The first time a server is seen its tools are trusted,
unless "quarantine": true (top level or per server) holds them for approval. A
tool whose definition later changes, or whose text looks like a prompt
injection (hidden-instruction tags, "ignore previous instructions", invisible
characters, instructions aimed at other tools or at hiding things from the
user), is held: hidden from retrieve_tools, describe_tool and direct-mode
tools/list, and refused by call_tool, until approved here. A running mcproxy
picks an approval up within a second, without a restart.

list     Every tool held for review, with the reasons.
diff     What changed: the approved definition against the held one (all held
         tools, one server's, or one tool's).
approve  Approve the held definition of one tool, or of every held tool of a
         server.

Approvals are kept in <data_dir>/tool-approvals.json (mode 0600).
`

func runTools(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		w, code := stderr, exitUsage
		if len(args) > 0 {
			w, code = stdout, exitOK
		}
		fmt.Fprint(w, toolsUsage)
		return code
	}
	sub, rest := args[0], args[1:]
	if !slices.Contains([]string{"list", "diff", "approve"}, sub) {
		fmt.Fprintf(stderr, "mcproxy tools: unknown subcommand %q\n\n%s", sub, toolsUsage)
		return exitUsage
	}
	fs := newFlagSet("tools "+sub, "tools "+sub+" [SERVER[:TOOL]] [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir)")
	dataDir := fs.String("data-dir", "", "the data directory, instead of the config's data_dir")
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	maxArgs := map[string]int{"list": 0, "diff": 1, "approve": 1}[sub]
	if len(pos) > maxArgs || (sub == "approve" && len(pos) == 0) {
		fmt.Fprintf(stderr, "mcproxy tools %s: wrong arguments %q\n\n%s", sub, pos, toolsUsage)
		return exitUsage
	}
	server, tool := "", ""
	if len(pos) == 1 {
		server, tool, _ = strings.Cut(pos[0], ":")
	}
	dir := config.ExpandHome(*dataDir)
	var shared *pgstore.Store
	if dir == "" {
		cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v (or pass --data-dir)\n", err)
			return exitError
		}
		dir = config.ExpandHome(cfg.DataDir)
		// With a shared store the approvals are there, for every replica.
		if shared, err = openSharedStore(cfg, zap.NewNop()); err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		if shared != nil {
			defer shared.Close()
		}
	}
	store := approvalStore(dir, shared)
	switch sub {
	case "list":
		err = listHeld(stdout, store)
	case "diff":
		err = diffHeld(stdout, store, server, tool)
	case "approve":
		err = approveHeld(stdout, store, server, tool)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy tools %s: %v\n", sub, err)
		return exitError
	}
	return exitOK
}

func listHeld(w io.Writer, store *integrity.Store) error {
	a, err := store.Load()
	if err != nil {
		return err
	}
	ids := a.Pending("", "")
	if len(ids) == 0 {
		fmt.Fprintf(w, "No tool is held for review (%s).\n", store.Path())
		return nil
	}
	for _, id := range ids {
		srv, name, _ := strings.Cut(id, ":")
		p := a.Servers[srv][name].Pending
		fmt.Fprintf(w, "%s  held since %s\n", id, p.At.UTC().Format(time.RFC3339))
		for _, r := range p.Reasons {
			fmt.Fprintf(w, "    - %s\n", r)
		}
	}
	fmt.Fprintf(w, "\n`mcproxy tools diff SERVER:TOOL` shows a change; `mcproxy tools approve SERVER[:TOOL]` releases it.\n")
	return nil
}

func diffHeld(w io.Writer, store *integrity.Store, server, tool string) error {
	a, err := store.Load()
	if err != nil {
		return err
	}
	ids := a.Pending(server, tool)
	if len(ids) == 0 {
		fmt.Fprintln(w, "Nothing held for review matches.")
		return nil
	}
	for i, id := range ids {
		if i > 0 {
			fmt.Fprintln(w)
		}
		srv, name, _ := strings.Cut(id, ":")
		e := a.Servers[srv][name]
		fmt.Fprintf(w, "=== %s (held: %s)\n", id, strings.Join(e.Pending.Reasons, "; "))
		if e.Approved == nil {
			fmt.Fprintf(w, "never approved; held definition %s:\n%s", e.Pending.Hash, integrity.Show(e.Pending.Definition))
			continue
		}
		fmt.Fprintf(w, "--- approved %s (%s)\n+++ held     %s (%s)\n%s", e.Approved.Hash, e.Approved.At.UTC().Format(time.RFC3339),
			e.Pending.Hash, e.Pending.At.UTC().Format(time.RFC3339), integrity.Diff(e.Approved.Definition, e.Pending.Definition))
	}
	return nil
}

func approveHeld(w io.Writer, store *integrity.Store, server, tool string) error {
	var ids []string
	_, err := store.Update(func(a *integrity.Approvals) (bool, error) {
		var err error
		ids, err = a.Approve(server, tool, time.Now())
		return err == nil, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Approved %s. A running mcproxy offers it again within a second.\n", strings.Join(ids, ", "))
	return nil
}
