package main

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
)

// missingConfig explains a config file that does not exist, without
// suggesting --config to someone who passed it (issue 18).
func missingConfig(path string) error {
	start := "start one with `mcproxy import claude-desktop` (or cursor, vscode, windsurf, claude-code, a file) or `mcproxy add NAME -- COMMAND ARGS...`; configs/example.json shows every key"
	if config.ExpandHome(path) == config.ExpandHome(config.DefaultConfigPath()) {
		return fmt.Errorf("no config file at %s: %s, or pass --config FILE", path, start)
	}
	return fmt.Errorf("no config file at %s (the --config path): check the path, or %s", path, start)
}
