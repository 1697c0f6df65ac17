package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/learn"
)

// learnFile is where cfg keeps words learned from use; "" when learning is
// off.
func learnFile(cfg *config.Config) string {
	if !cfg.LearnEnabled() {
		return ""
	}
	return filepath.Join(config.ExpandHome(cfg.DataDir), learn.FileName)
}

const learnedUsage = `Usage:
  mcproxy learned [list [TOOL]] [--config F]   what retrieve_tools learned, per tool
  mcproxy learned forget TOOL [--config F]     drop what one tool learned
  mcproxy learned reset [--config F]           drop everything learned

retrieve_tools learns from use: when a search misses and the agent finds its tool
another way (another search, describe_tool) and then calls it successfully, the
words of those searches that the tool's own text lacks are kept for it, in
<data_dir>/learned.json, and later searches find the tool by them. A running
mcproxy picks up forget and reset at its next search. "learn": false in the
config turns learning off.
`

func runLearned(args []string, stdout, stderr io.Writer) int {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	// "learned --help" is about every subcommand, not the default list.
	if sub == "help" || (len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0])) {
		fmt.Fprint(stdout, learnedUsage)
		return exitOK
	}
	want := map[string][2]int{"list": {0, 1}, "forget": {1, 1}, "reset": {0, 0}}
	n, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "mcproxy learned: unknown subcommand %q\n\n%s", sub, learnedUsage)
		return exitUsage
	}
	fs := newFlagSet("learned "+sub, "learned "+sub+" [TOOL] [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file (for data_dir)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) < n[0] || len(pos) > n[1] {
		fmt.Fprintf(stderr, "mcproxy learned %s: wrong number of arguments %q\n\n%s", sub, pos, learnedUsage)
		return exitUsage
	}
	cfg, err := loadConfig(*cfgPath, func(*config.Config) {})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	path := filepath.Join(config.ExpandHome(cfg.DataDir), learn.FileName)
	st, err := learn.Open(learn.Options{Path: path})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy learned: %v\n", err)
		return exitError
	}
	if !cfg.LearnEnabled() && sub == "list" {
		fmt.Fprintln(stdout, `learning is off ("learn": false): what is listed below is kept but not searched`)
	}
	switch sub {
	case "list":
		tool := ""
		if len(pos) == 1 {
			tool = pos[0]
		}
		err = listLearned(stdout, st, path, tool)
	case "forget":
		var had bool
		if had, err = st.Forget(pos[0]); err == nil {
			if had {
				fmt.Fprintf(stdout, "forgot what %s learned\n", pos[0])
			} else {
				fmt.Fprintf(stdout, "%s has learned nothing; `mcproxy learned list` shows the tools that have\n", pos[0])
			}
		}
	case "reset":
		var ids []string
		if ids, err = st.Reset(); err == nil {
			fmt.Fprintf(stdout, "forgot what %d tool(s) learned\n", len(ids))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy learned %s: %v\n", sub, err)
		return exitError
	}
	return exitOK
}

// listLearned writes one line per learned word: the tool, the word (as the
// index analyzed it), the episodes that taught it, whether it counts yet,
// and when it was last taught.
func listLearned(w io.Writer, st *learn.Store, path, tool string) error {
	all := st.List()
	ids := make([]string, 0, len(all))
	for id := range all {
		if tool == "" || id == tool {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		if tool != "" {
			_, err := fmt.Fprintf(w, "%s has learned nothing (in %s)\n", tool, path)
			return err
		}
		_, err := fmt.Fprintf(w, "nothing learned yet (in %s)\n", path)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tWORD\tEPISODES\tWEIGHT\tLAST TAUGHT (UTC)")
	for _, id := range ids {
		for _, e := range all[id] {
			weight := fmt.Sprint(st.Weight(e))
			if e.Held && e.Episodes < 2 {
				weight = "held (needs 2 episodes)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", id, e.Term, e.Episodes, weight, e.Last.UTC().Format("2006-01-02 15:04"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d tool(s) in %s\n", len(ids), path)
	return err
}
