package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcproxy/mcproxy/bench/trajectory"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// benchImport runs `mcproxy bench import`: it converts one agent run from
// its source file (package bench/trajectory, Import) and stores it where
// `mcproxy bench gateway` reads runs.
func benchImport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcproxy bench import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o trajectory.ImportOptions
	dir := fs.String("trajectories", "", "directory to store the run in (default: $"+trajectory.DirEnv+", else "+trajectory.DefaultDir+")")
	replace := fs.Bool("replace", false, "replace a stored run of the same id")
	fs.StringVar(&o.Format, "format", "", "source format: "+strings.Join(trajectory.Formats, ", ")+" (default: told from the file)")
	fs.StringVar(&o.Instance, "instance", "", "OpenHands: the instance_id of the record to convert (needed when the file holds several)")
	fs.StringVar(&o.ID, "id", "", "the run's id, and its file name without "+trajectory.Ext+" (default: MODEL.TASK)")
	fs.StringVar(&o.Agent, "agent", "", "agent and version (default: from the record)")
	fs.StringVar(&o.Model, "model", "", "the model that produced the turns (default: from the record, without its provider prefix)")
	fs.StringVar(&o.Task, "task", "", "the benchmark instance (default: the record's instance id)")
	fs.StringVar(&o.Source, "source", "", "where the file came from, recorded in the run: repository@commit:path (default: FILE as given)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: mcproxy bench import [flags] FILE\n\n"+
			"Converts one agent run (a mini-swe-agent .traj.json, or a record of an OpenHands output.jsonl) into the\n"+
			"format `mcproxy bench gateway` replays, checks that it is a conversation a provider would accept, and\n"+
			"writes ID"+trajectory.Ext+". bench/trajectory/SOURCES.md says how each format is converted.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usageError{fmt.Errorf("want one source file, got %d arguments", fs.NArg())}
	}
	file := fs.Arg(0)
	if o.Source == "" {
		o.Source = file
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	t, err := trajectory.Import(data, o)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	store := trajectory.Open(trajectory.Options{Dir: *dir})
	path, err := store.Write(t, *replace)
	if errors.Is(err, trajectory.ErrExists) {
		return fmt.Errorf("%w: pass --replace to overwrite it", err)
	}
	if err != nil {
		return err
	}
	c, err := tokens.New("cl100k_base") // bench gateway's default
	if err != nil {
		return err
	}
	st := t.Stats(c)
	fmt.Fprintf(stdout, "wrote %s: %s, %s; steps %d, later-needed facts %d, tokens at the last turn %d (cl100k_base)\n",
		path, t.Agent, t.Model, st.Turns, len(t.Facts()), st.Peak)
	return nil
}
