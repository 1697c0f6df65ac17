// Package importer reads the MCP server lists of other clients' config
// files (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Cline) and
// turns them into mcproxy's mcpServers entries; it also edits JSON config
// files in place, keeping their other keys and order, so mcproxy's config
// can take imported servers and a client's can be pointed at mcproxy
// (issue 18) and back, keeping what the client changed since (Restore,
// issue 30), and find the entries that launch mcproxy (Launchers, for
// doctor). It reads and returns bytes: the caller owns file access,
// backups and prompting, and nothing here starts a server or logs.
package importer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Input is a VS Code "inputs" entry: a value the client asks the user for
// when a server first needs it (${input:ID}).
type Input struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
	Default     string `json:"default"`
}

// Options say how to resolve what a client file leaves to its client.
type Options struct {
	// Workspace replaces ${workspaceFolder} and ${cwd}, and picks the
	// Claude Code project whose servers are imported besides the user's.
	// Empty means such a variable is an error naming the server.
	Workspace string
	// Home replaces ${userHome}. Empty means ${HOME}, expanded when mcproxy
	// loads its config.
	Home string
	// Prompt returns the value of a VS Code input. nil means an
	// ${input:...} reference is an error naming the input.
	Prompt func(in Input) (string, error)
}

// Server is one imported server.
type Server struct {
	Name   string
	Config config.ServerConfig
}

// Result is what a client file holds for mcproxy.
type Result struct {
	// Servers are sorted by name.
	Servers []Server
	// Notes say what was ignored or changed, one line each, in file order.
	Notes []string
}

// Parse reads a client's config file (the whole file: JSON with comments
// and trailing commas allowed). Servers come from "mcpServers" (Claude,
// Cursor, Windsurf, Cline) or "servers" (VS Code), plus, in Claude Code's
// ~/.claude.json, the project of opts.Workspace. Other top-level keys are
// ignored, with one note naming them all.
func Parse(data []byte, opts Options) (*Result, error) {
	top, err := members(stripJSONC(data))
	if err != nil {
		return nil, fmt.Errorf("reading the file as JSON: %w", err)
	}
	r := &Result{}
	var inputs []Input
	if i := indexOf(top, "inputs"); i >= 0 {
		if err := json.Unmarshal(top[i].raw, &inputs); err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
	}
	p := parser{opts: opts, inputs: inputs, r: r, answers: map[string]string{}}
	found := false
	var ignored []string
	ignoredAt := 0 // where in Notes the one line about them goes
	for _, m := range top {
		switch m.key {
		case "mcpServers", "servers":
			found = true
			if err := p.servers(m.key, m.raw); err != nil {
				return nil, err
			}
		case "inputs":
		case "projects":
			if err := p.projects(m.raw); err != nil {
				return nil, err
			}
		default:
			if ignored == nil {
				ignoredAt = len(r.Notes)
			}
			ignored = append(ignored, m.key)
		}
	}
	if ignored != nil {
		// One line for them all: a nearly empty Claude Code file has a
		// dozen such keys (issue 30).
		r.Notes = slices.Insert(r.Notes, ignoredAt, strings.Join(ignored, ", ")+": not about MCP servers, ignored")
	}
	if !found && len(r.Servers) == 0 {
		return nil, fmt.Errorf(`no "mcpServers" or "servers" object in the file`)
	}
	sort.Slice(r.Servers, func(i, j int) bool { return r.Servers[i].Name < r.Servers[j].Name })
	return r, nil
}

type parser struct {
	opts    Options
	inputs  []Input
	answers map[string]string
	r       *Result
}

// projects imports the Claude Code project of opts.Workspace and notes the
// others.
func (p *parser) projects(raw json.RawMessage) error {
	projects, err := members(raw)
	if err != nil {
		return fmt.Errorf("projects: %w", err)
	}
	others := 0
	for _, pr := range projects {
		fields, err := members(pr.raw)
		if err != nil {
			continue
		}
		i := indexOf(fields, "mcpServers")
		if i < 0 {
			continue
		}
		if p.opts.Workspace != "" && filepath.Clean(pr.key) == filepath.Clean(p.opts.Workspace) {
			if err := p.servers("projects."+pr.key+".mcpServers", fields[i].raw); err != nil {
				return err
			}
			continue
		}
		if ms, _ := members(fields[i].raw); len(ms) > 0 {
			others++
		}
	}
	if others > 0 {
		p.r.Notes = append(p.r.Notes, fmt.Sprintf("projects: servers of %d other project(s) not imported (run the import from a project's folder to take its servers)", others))
	}
	return nil
}

func (p *parser) servers(path string, raw json.RawMessage) error {
	list, err := members(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range list {
		sp := path + "." + s.key
		sc, skip, err := p.server(sp, s.raw)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		if i := slices.IndexFunc(p.r.Servers, func(x Server) bool { return x.Name == s.key }); i >= 0 {
			p.r.Notes = append(p.r.Notes, fmt.Sprintf("%s: a second server named %q; this one replaces the first", sp, s.key))
			p.r.Servers = slices.Delete(p.r.Servers, i, i+1)
		}
		p.r.Servers = append(p.r.Servers, Server{Name: s.key, Config: sc})
	}
	return nil
}

// ignoredKeys are server keys of other clients that mean nothing to
// mcproxy, with why.
var ignoredKeys = map[string]string{
	"autoApprove":   "mcproxy has no approval list; your client still asks before each call",
	"alwaysAllow":   "mcproxy has no approval list; your client still asks before each call",
	"timeout":       `set "call_timeout" (e.g. "60s") to bound each call`,
	"transportType": "mcproxy tells stdio from a URL by itself",
	"description":   "",
	"dev":           "VS Code's development mode",
	"gallery":       "",
	"version":       "",
}

// server converts one entry. skip is true for an entry that launches
// mcproxy itself (a client already set up).
func (p *parser) server(path string, raw json.RawMessage) (sc config.ServerConfig, skip bool, err error) {
	fields, err := members(raw)
	if err != nil {
		return sc, false, fmt.Errorf("%s: %w", path, err)
	}
	str := func(m member) (string, error) {
		var s string
		if err := json.Unmarshal(m.raw, &s); err != nil {
			return "", fmt.Errorf("%s.%s: want a string", path, m.key)
		}
		return p.value(path+"."+m.key, s)
	}
	strMap := func(m member) (map[string]string, error) {
		var in map[string]string
		if err := json.Unmarshal(m.raw, &in); err != nil {
			return nil, fmt.Errorf("%s.%s: want an object of strings", path, m.key)
		}
		out := make(map[string]string, len(in))
		for k, v := range in {
			if out[k], err = p.value(path+"."+m.key+"."+k, v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for _, m := range fields {
		switch m.key {
		case "command":
			sc.Command, err = str(m)
		case "cwd":
			sc.Cwd, err = str(m)
		case "url", "serverUrl", "httpUrl":
			sc.URL, err = str(m)
		case "type", "transport":
			var t string
			if t, err = str(m); err == nil {
				switch t {
				case "sse":
					sc.Transport = config.TransportSSE
				case "stdio", "http", "streamable-http", "streamableHttp":
				default:
					err = fmt.Errorf("%s.%s: unknown transport %q (want stdio, http or sse)", path, m.key, t)
				}
			}
		case "args":
			var args []string
			if err = json.Unmarshal(m.raw, &args); err != nil {
				err = fmt.Errorf("%s.args: want an array of strings", path)
				break
			}
			for i, a := range args {
				if args[i], err = p.value(fmt.Sprintf("%s.args[%d]", path, i), a); err != nil {
					break
				}
			}
			sc.Args = args
		case "env":
			sc.Env, err = strMap(m)
		case "headers":
			sc.Headers, err = strMap(m)
		case "disabled", "enabled":
			var b bool
			if err = json.Unmarshal(m.raw, &b); err != nil {
				err = fmt.Errorf("%s.%s: want true or false", path, m.key)
				break
			}
			if m.key == "disabled" {
				b = !b
			}
			if !b {
				sc.Enabled = &b
			}
		case "envFile":
			p.r.Notes = append(p.r.Notes, fmt.Sprintf("%s.envFile: not read; copy the variables the server needs into \"env\" (values may be ${VAR} references)", path))
		default:
			why, known := ignoredKeys[m.key]
			switch {
			case !known:
				why = "unknown to mcproxy"
			case why == "":
				why = "not used by mcproxy"
			}
			p.r.Notes = append(p.r.Notes, fmt.Sprintf("%s.%s: ignored (%s)", path, m.key, why))
		}
		if err != nil {
			return sc, false, err
		}
	}
	if sc.Command == "" && sc.URL == "" {
		return sc, false, fmt.Errorf("%s: neither a command nor a url", path)
	}
	if isMcproxy(sc) {
		p.r.Notes = append(p.r.Notes, fmt.Sprintf("%s: launches mcproxy itself, skipped", path))
		return sc, true, nil
	}
	return sc, false, nil
}

// isMcproxy reports whether a server entry runs mcproxy (as setup writes).
func isMcproxy(sc config.ServerConfig) bool {
	base := strings.TrimSuffix(filepath.Base(sc.Command), ".exe")
	return base == "mcproxy" && slices.Contains(sc.Args, "serve")
}
