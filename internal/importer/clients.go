package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
