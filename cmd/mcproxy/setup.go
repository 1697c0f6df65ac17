package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/importer"
)

// backupSuffix names the copy of a client's file that setup keeps and
// setup --undo puts back. An empty backup means the client had no file.
const backupSuffix = ".mcproxy-backup"

func runSetup(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("setup", "setup [flags] "+strings.Join(importer.Clients, "|"), stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "mcproxy's config file (created when missing)")
	undo := fs.Bool("undo", false, "take mcproxy's entry out of the client's file and put its own servers back, keeping what the client changed since")
	workspace := fs.String("workspace", "", "project folder for ${workspaceFolder} (default: the current folder)")
	exe := fs.String("binary", "", "the mcproxy the client launches (default: this one)")
	profileName := fs.String("profile", "", "point the client at this profile of mcproxy's config (it launches serve --stdio --profile NAME)")
	var inputs multiFlag
	fs.Var(&inputs, "input", "ID=VALUE answers a VS Code ${input:ID} without asking (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) != 1 || !slices.Contains(importer.Clients, pos[0]) {
		fmt.Fprintf(stderr, "mcproxy setup: name one client: %s\n", strings.Join(importer.Clients, ", "))
		return exitUsage
	}
	client := pos[0]
	ws, err := workspaceDir(*workspace)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy setup: %v\n", err)
		return exitError
	}
	path, err := importer.ClientPath(client, clientEnv(ws))
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy setup: %v\n", err)
		return exitUsage
	}
	if *undo {
		if err := undoSetup(path, stdout); err != nil {
			fmt.Fprintf(stderr, "mcproxy setup --undo: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if *profileName != "" {
		// Checked before anything is imported or written: a client
		// pointed at a profile that does not exist would not start.
		cfg, err := config.Load(config.ExpandHome(*cfgPath))
		if err == nil {
			err = (&stdioProfile{name: *profileName}).check(cfg)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy setup %s --profile %s: %v\n", client, *profileName, err)
			return exitError
		}
	}
	opts, err := importOptions(ws, inputs, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy setup: %v\n", err)
		return exitUsage
	}
	if err := setup(client, path, *cfgPath, *exe, *profileName, ws, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "mcproxy setup %s: %v\n", client, err)
		return exitError
	}
	return exitOK
}

// setup imports the client's servers into mcproxy's config, then replaces
// them in the client's file by one entry that launches mcproxy.
func setup(client, path, cfgPath, exe, profileName, ws string, opts importer.Options, out io.Writer) error {
	orig, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if orig != nil {
		m, err := importInto(cfgPath, path, ws, opts, false, out)
		if err != nil {
			return err
		}
		if len(m.Clashes) > 0 {
			return fmt.Errorf("%s was left as it was: mcproxy's config already has other servers named %s; settle those first so nothing of the client's is lost", path, strings.Join(m.Clashes, ", "))
		}
	}
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this mcproxy's path (pass --binary): %w", err)
		}
	}
	absCfg, err := filepath.Abs(config.ExpandHome(cfgPath))
	if err != nil {
		return err
	}
	args := []string{"serve", "--stdio", "--config", absCfg}
	if profileName != "" {
		args = append(args, "--profile", profileName)
	}
	data, err := importer.PointAt(orig, config.ServerConfig{Command: exe, Args: args})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	backup := path + backupSuffix
	if !fileExists(backup) { // a second setup keeps the first backup: undo goes back to before mcproxy
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(backup, orig, 0o600); err != nil {
			return fmt.Errorf("writing the backup %s: %w", backup, err)
		}
	}
	if _, err := writeWithBackup(path, nil, data); err != nil {
		return err
	}
	if orig != nil && !importer.PlainJSON(orig) {
		fmt.Fprintf(out, "  note: the comments and trailing commas of %s were not kept (the backup has them)\n", path)
	}
	fmt.Fprintf(out, "%s now launches mcproxy (%s); its own file is kept at %s\n", client, exe, backup)
	fmt.Fprintf(out, "restart %s to use it; `mcproxy setup %s --undo` puts the file back\n", client, client)
	return nil
}

// undoSetup takes mcproxy's entry out of the client's file and puts the
// client's own servers back from the backup setup saved, keeping whatever
// the client changed in the file since (importer.Restore).
func undoSetup(path string, out io.Writer) error {
	backup := path + backupSuffix
	before, err := os.ReadFile(backup)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no backup at %s: setup was not run for this client (or was undone already)", backup)
	}
	if err != nil {
		return err
	}
	now, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	r, err := importer.Restore(before, now)
	if err != nil {
		return fmt.Errorf("%s: %w (fix the file, or put the backup back by hand: cp %s %s)", path, err, backup, path)
	}
	switch {
	case r.Data == nil:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fmt.Fprintf(out, "removed %s (the client had no file before setup)\n", path)
	default:
		if _, err := writeWithBackup(path, nil, r.Data); err != nil {
			return err
		}
		reportRestore(out, path, r)
	}
	if err := os.Remove(backup); err != nil {
		return err
	}
	fmt.Fprintln(out, "the servers imported into mcproxy's config stay there; remove them with `mcproxy remove NAME` if you like")
	return nil
}

// reportRestore says what undoSetup did to the client's file.
func reportRestore(out io.Writer, path string, r *importer.Restored) {
	if r.Verbatim {
		fmt.Fprintf(out, "restored %s as it was before setup (nothing else changed since)\n", path)
		return
	}
	servers := "no servers of its own to put back"
	if len(r.Servers) > 0 {
		servers = fmt.Sprintf("put back its %d server(s): %s", len(r.Servers), strings.Join(r.Servers, ", "))
	}
	fmt.Fprintf(out, "restored %s: took out mcproxy's entry, %s\n", path, servers)
	if len(r.Kept) > 0 {
		fmt.Fprintf(out, "  kept what the client changed since setup: %s\n", strings.Join(r.Kept, ", "))
	}
	if len(r.Added) > 0 {
		fmt.Fprintf(out, "  kept the servers added since setup: %s\n", strings.Join(r.Added, ", "))
	}
	if r.Comments {
		fmt.Fprintf(out, "  note: the comments and trailing commas of %s were not kept\n", path)
	}
}
