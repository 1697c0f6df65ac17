package server

import (
	"fmt"
	"sort"
	"strings"
)

// When retrieve_tools finds nothing, or only weak matches (Hit.Weak: the
// best tool shares little of the query's wording), the answer also lists the
// connected servers, one line each, so the model can search again naming a
// server; the index ranks a named server's tools first.

// maxDirectoryServers caps the server list so a large installation cannot
// flood the answer; the rest are counted.
const maxDirectoryServers = 60

// maxDirectoryLine bounds the tool names shown per server line.
const maxDirectoryLine = 110

// serverDirectory renders the connected servers, one line each: the name,
// the number of tools and the first tool names that fit. Empty when the
// catalog is.
func (s *Server) serverDirectory() string {
	s.mu.RLock()
	byServer := map[string][]string{}
	for _, t := range s.byID {
		byServer[t.Server] = append(byServer[t.Server], t.Name)
	}
	s.mu.RUnlock()
	if len(byServer) == 0 {
		return ""
	}
	servers := make([]string, 0, len(byServer))
	for name := range byServer {
		servers = append(servers, name)
	}
	sort.Strings(servers)
	var b strings.Builder
	b.WriteString("Connected servers (search again with a server's name and the task, e.g. \"")
	b.WriteString(servers[0])
	b.WriteString(" ...\", to rank its tools first):\n")
	for i, name := range servers {
		if i == maxDirectoryServers {
			fmt.Fprintf(&b, "- ... and %d more servers\n", len(servers)-i)
			break
		}
		tools := byServer[name]
		sort.Strings(tools)
		line := fmt.Sprintf("- %s (%d %s): ", name, len(tools), plural(len(tools), "tool", "tools"))
		for j, t := range tools {
			sep := ", "
			if j == 0 {
				sep = ""
			}
			if len(line)+len(sep)+len(t) > maxDirectoryLine {
				line += sep + "..."
				break
			}
			line += sep + t
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// weakText wraps rendered matches that all match the query poorly.
func (s *Server) weakText(rendered string) string {
	dir := s.serverDirectory()
	if dir == "" {
		return rendered
	}
	return "These matches share little wording with the query; if none fits, search again with other words or name a server from the list below.\n\n" +
		rendered + "\n\n" + dir
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
