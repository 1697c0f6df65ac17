package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/importer"
)

// The commands that edit config files: import, setup, add, remove. Each
// writes a backup before it changes a file and validates mcproxy's config
// before writing it, so a bad import loses nothing.

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runImport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("import", "import [flags] [FILE|"+strings.Join(importer.Clients, "|")+"]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "mcproxy's config file (created when missing)")
	workspace := fs.String("workspace", "", "project folder for ${workspaceFolder} and Claude Code's project servers (default: the current folder)")
	var inputs multiFlag
	fs.Var(&inputs, "input", "ID=VALUE answers a VS Code ${input:ID} without asking (repeatable)")
	dry := fs.Bool("dry-run", false, "print the new config instead of writing it")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "mcproxy import: one source at a time, got %q\n", pos)
		return exitUsage
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy import: %v\n", err)
		return exitError
	}
	opts, err := importOptions(ws, inputs, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy import: %v\n", err)
		return exitUsage
	}
	var sources []string
	if len(pos) == 1 {
		sources = pos
	} else {
		// No source: every client whose file exists here.
		for _, c := range importer.Clients {
			if p, err := importer.ClientPath(c, clientEnv(ws)); err == nil && fileExists(p) {
				sources = append(sources, c)
			}
		}
		if len(sources) == 0 {
			fmt.Fprintf(stderr, "mcproxy import: found no client config (looked for %s); name a FILE\n", strings.Join(importer.Clients, ", "))
			return exitError
		}
	}
	code := exitOK
	for _, src := range sources {
		if _, err := importInto(*cfgPath, src, ws, opts, *dry, stdout); err != nil {
			fmt.Fprintf(stderr, "mcproxy import %s: %v\n", src, err)
			code = exitError
		}
	}
	return code
}

// importInto imports source (a client name or a file) into mcproxy's config
// at cfgPath and reports what it did on out.
func importInto(cfgPath, source, ws string, opts importer.Options, dry bool, out io.Writer) (*importer.Merged, error) {
	path := source
	if slices.Contains(importer.Clients, source) {
		p, err := importer.ClientPath(source, clientEnv(ws))
		if err != nil {
			return nil, err
		}
		path = p
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	r, err := importer.Parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(out, "%s: %d server(s)\n", path, len(r.Servers))
	for _, n := range r.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	var merged *importer.Merged
	_, err = editConfig(cfgPath, dry, out, func(old []byte) ([]byte, error) {
		merged, err = importer.Merge(old, r.Servers)
		if err != nil {
			return nil, err
		}
		if len(merged.Added) == 0 && old != nil {
			return old, nil
		}
		return merged.Data, nil
	})
	if err != nil {
		return nil, err
	}
	report(out, "added", merged.Added)
	report(out, "already there", merged.Same)
	for _, name := range merged.Clashes {
		fmt.Fprintf(out, "  clash: %q is already in mcproxy's config with other settings; kept mcproxy's (rename one, or `mcproxy remove %s` and import again)\n", name, name)
	}
	return merged, nil
}

func report(out io.Writer, what string, names []string) {
	if len(names) > 0 {
		fmt.Fprintf(out, "  %s: %s\n", what, strings.Join(names, ", "))
	}
}

// edited is what editConfig did.
type edited struct{ old, new []byte }

// editConfig rewrites mcproxy's config with change: the result must load
// (variables it references may be unset here: they are named), a backup
// of the old file is written first, and with dry the new file is printed
// instead.
func editConfig(cfgPath string, dry bool, out io.Writer, change func(old []byte) ([]byte, error)) (*edited, error) {
	path := config.ExpandHome(cfgPath)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	data, err := change(old)
	if err != nil {
		return nil, err
	}
	if old != nil && bytes.Equal(old, data) {
		fmt.Fprintf(out, "  %s unchanged\n", path)
		return &edited{old: old, new: data}, nil
	}
	unset, err := neededVars(data)
	if err != nil {
		return nil, fmt.Errorf("the result would not load, so %s is left as it was: %w", path, err)
	}
	if old != nil {
		// Only what this change brings: the variables the config needed
		// before were noted when they came in (issue 30).
		before, _ := neededVars(old)
		unset = slices.DeleteFunc(unset, func(k string) bool { return slices.Contains(before, k) })
	}
	if len(unset) > 0 {
		fmt.Fprintf(out, "  note: not set in this shell, needed in mcproxy's environment: %s\n", strings.Join(unset, ", "))
	}
	if dry {
		_, _ = out.Write(data)
		return &edited{old: old, new: data}, nil
	}
	backup, err := writeWithBackup(path, old, data)
	if err != nil {
		return nil, err
	}
	if backup != "" {
		fmt.Fprintf(out, "  backup: %s\n", backup)
	}
	fmt.Fprintf(out, "  wrote %s\n", path)
	return &edited{old: old, new: data}, nil
}

// neededVars checks that the config data loads once the variables it
// refers to are set, and returns, sorted, those this shell leaves unset
// that it needs: referred to without a default (a ${VAR:-x} is not).
func neededVars(data []byte) ([]string, error) {
	var asked []string
	getenv := func(unset string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if v, ok := os.LookupEnv(k); ok {
				return v, true
			}
			if k == unset {
				return "", false
			}
			if !slices.Contains(asked, k) {
				asked = append(asked, k)
			}
			return "set-later", true
		}
	}
	if _, _, err := config.ParseWithNotes(data, getenv("")); err != nil {
		return nil, err
	}
	// Whether a reference has a default shows only in whether leaving
	// its variable unset fails; a config refers to a handful.
	var needed []string
	for _, k := range slices.Clone(asked) {
		if _, _, err := config.ParseWithNotes(data, getenv(k)); err != nil {
			needed = append(needed, k)
		}
	}
	slices.Sort(needed)
	return needed, nil
}

// backupStamp is the time in a backup's name; it sorts as the time does.
const backupStamp = "20060102-150405.000"

// writeWithBackup writes data to path, first copying old (when there was a
// file) to a timestamped backup beside it, which it returns.
func writeWithBackup(path string, old, data []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	backup := ""
	if old != nil {
		backup = path + "." + time.Now().UTC().Format(backupStamp) + ".bak"
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return "", fmt.Errorf("writing the backup %s: %w", backup, err)
		}
	}
	if err := atomicfile.WriteFile(path, data, atomicfile.Options{}); err != nil {
		return "", fmt.Errorf("replacing %s: %w", path, err)
	}
	if backup != "" {
		pruneBackups(path)
	}
	return backup, nil
}

// keptBackups is how many timestamped backups of a config file
// writeWithBackup keeps; older ones are removed (issue 30: every import,
// add and remove left one more).
const keptBackups = 3

// pruneBackups removes all but the newest keptBackups backups of path.
func pruneBackups(path string) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return
	}
	var ours []string
	prefix := filepath.Base(path) + "."
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !strings.HasSuffix(stamp, ".bak") {
			continue
		}
		if _, err := time.Parse(backupStamp, strings.TrimSuffix(stamp, ".bak")); err == nil {
			ours = append(ours, e.Name())
		}
	}
	slices.Sort(ours) // the stamps sort as the times do
	for _, name := range ours[:max(0, len(ours)-keptBackups)] {
		_ = os.Remove(filepath.Join(filepath.Dir(path), name))
	}
}

// importOptions builds the importer's options: --input answers first, then
// a prompt on stderr read from stdin.
func importOptions(ws string, inputs []string, stdin io.Reader, stderr io.Writer) (importer.Options, error) {
	answers := map[string]string{}
	for _, kv := range inputs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return importer.Options{}, fmt.Errorf("--input %q: want ID=VALUE", kv)
		}
		answers[k] = v
	}
	lines := bufio.NewReader(stdin)
	return importer.Options{
		Workspace: ws,
		Prompt: func(in importer.Input) (string, error) {
			if v, ok := answers[in.ID]; ok {
				return v, nil
			}
			fmt.Fprintf(stderr, "%s (input %q", in.Description, in.ID)
			if in.Password {
				fmt.Fprint(stderr, ", secret: stored in mcproxy's config, file mode 0600")
			}
			fmt.Fprint(stderr, "): ")
			line, err := lines.ReadString('\n')
			if err != nil && line == "" {
				return "", fmt.Errorf("no answer on stdin (pass --input %s=VALUE)", in.ID)
			}
			v := strings.TrimRight(line, "\r\n")
			if v == "" {
				v = in.Default
			}
			return v, nil
		},
	}, nil
}

func workspaceDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	return os.Getwd()
}

func clientEnv(ws string) importer.Env {
	home, _ := os.UserHomeDir()
	return importer.Env{GOOS: runtime.GOOS, Home: home, AppData: os.Getenv("APPDATA"), XDGConfig: os.Getenv("XDG_CONFIG_HOME"), Workspace: ws}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
