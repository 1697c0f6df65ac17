package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/importer"
)

func runAdd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("add", "add [flags] NAME -- COMMAND [ARGS...]\n       mcproxy add [flags] NAME URL", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "mcproxy's config file (created when missing)")
	var env, headers multiFlag
	fs.Var(&env, "env", "KEY=VALUE for a command's environment (repeatable; VALUE may be ${VAR})")
	fs.Var(&headers, "header", "KEY=VALUE sent to a URL server (repeatable; VALUE may be ${VAR})")
	sse := fs.Bool("sse", false, "the URL speaks legacy SSE rather than streamable HTTP")
	// Everything after -- is the command line, flags included.
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	var sc config.ServerConfig
	switch {
	case len(pos) == 1 && len(command) > 0:
		sc.Command, sc.Args = command[0], command[1:]
	case len(pos) == 2 && len(command) == 0 && isURL(pos[1]):
		sc.URL = pos[1]
		if *sse {
			sc.Transport = config.TransportSSE
		}
	default:
		fmt.Fprint(stderr, "mcproxy add: want NAME -- COMMAND [ARGS...] or NAME URL\n")
		fs.Usage()
		return exitUsage
	}
	if sc.Env, err = keyValues("--env", env); err == nil {
		sc.Headers, err = keyValues("--header", headers)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy add: %v\n", err)
		return exitUsage
	}
	name := pos[0]
	_, err = editConfig(*cfgPath, false, stdout, func(old []byte) ([]byte, error) {
		m, err := importer.Merge(old, []importer.Server{{Name: name, Config: sc}})
		if err != nil {
			return nil, err
		}
		if len(m.Added) == 0 {
			return nil, fmt.Errorf("the config already has a server named %q (`mcproxy remove %s` first to replace it)", name, name)
		}
		return m.Data, nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy add: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "added %s (a running mcproxy picks it up by itself)\n", name)
	return exitOK
}

func runRemove(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("remove", "remove [flags] NAME", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "mcproxy's config file")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, "mcproxy remove: name one server\n")
		return exitUsage
	}
	_, err = editConfig(*cfgPath, false, stdout, func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("no config file at %s", *cfgPath)
		}
		return importer.Remove(old, pos[0])
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy remove: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "removed %s\n", pos[0])
	return exitOK
}

func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func keyValues(flagName string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flagName, kv)
		}
		m[k] = v
	}
	return m, nil
}
