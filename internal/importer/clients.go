package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Clients are the names import and setup accept for a client's usual file.
var Clients = []string{"claude-desktop", "claude-code", "cursor", "vscode", "windsurf"}

// Env is what ClientPath needs to know about the machine.
type Env struct {
	GOOS string // runtime.GOOS
	Home string // the user's home directory
	// AppData is %APPDATA% on Windows; XDGConfig is $XDG_CONFIG_HOME
	// elsewhere (empty = ~/.config).
	AppData, XDGConfig string
	// Workspace is the project folder (VS Code's .vscode/mcp.json there
	// wins over the user's file when it exists).
	Workspace string
}

// ClientPath is where client keeps its MCP servers on env's OS.
func ClientPath(client string, env Env) (string, error) {
	userConfig := func(parts ...string) string { // per-user application data
		switch env.GOOS {
		case "darwin":
			return filepath.Join(append([]string{env.Home, "Library", "Application Support"}, parts...)...)
		case "windows":
			return filepath.Join(append([]string{env.AppData}, parts...)...)
		}
		base := env.XDGConfig
		if base == "" {
			base = filepath.Join(env.Home, ".config")
		}
		return filepath.Join(append([]string{base}, parts...)...)
	}
	switch client {
	case "claude-desktop":
		return userConfig("Claude", "claude_desktop_config.json"), nil
	case "claude-code":
		return filepath.Join(env.Home, ".claude.json"), nil
	case "cursor":
		return filepath.Join(env.Home, ".cursor", "mcp.json"), nil
	case "windsurf":
		return filepath.Join(env.Home, ".codeium", "windsurf", "mcp_config.json"), nil
	case "vscode":
		if env.Workspace != "" {
			p := filepath.Join(env.Workspace, ".vscode", "mcp.json")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return userConfig("Code", "User", "mcp.json"), nil
	}
	return "", fmt.Errorf("unknown client %q (want a file path or one of %s)", client, strings.Join(Clients, ", "))
}

// ServersKey is the key a client file keeps its servers under.
func ServersKey(data []byte) string {
	top, err := members(stripJSONC(data))
	if err == nil && indexOf(top, "servers") >= 0 && indexOf(top, "mcpServers") < 0 {
		return "servers"
	}
	return "mcpServers"
}

// Launcher is a server entry of a client's file that launches mcproxy.
type Launcher struct {
	Name    string // the entry's key
	Command string
	// Config is the --config it is given; "" when none (mcproxy's default).
	Config string
}

// Launchers reads a client's file (its top-level servers) and returns the
// entries that launch mcproxy, and how many other servers it has, so
// doctor can tell whether setup's entry is there and whose config it runs.
func Launchers(data []byte) (list []Launcher, others int, err error) {
	plain := stripJSONC(data)
	top, err := members(plain)
	if err != nil {
		return nil, 0, err
	}
	i := indexOf(top, ServersKey(plain))
	if i < 0 {
		return nil, 0, nil
	}
	servers, err := members(top[i].raw)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", top[i].key, err)
	}
	for _, m := range servers {
		// Only the launch: other keys are the client's and may not be
		// mcproxy's types.
		var sc struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if json.Unmarshal(m.raw, &sc) != nil || !isMcproxy(config.ServerConfig{Command: sc.Command, Args: sc.Args}) {
			others++
			continue
		}
		l := Launcher{Name: m.key, Command: sc.Command}
		if j := slices.Index(sc.Args, "--config"); j >= 0 && j+1 < len(sc.Args) {
			l.Config = sc.Args[j+1]
		}
		list = append(list, l)
	}
	return list, others, nil
}
