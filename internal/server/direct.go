package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// maxToolName is the longest tool name every major client accepts (OpenAI
// and Anthropic function names are limited to 64 characters of
// [A-Za-z0-9_-]).
const maxToolName = 64

// hashLen is the length of the hex suffix that disambiguates a name.
const hashLen = 8

// directEntry is one registered direct-mode tool.
type directEntry struct {
	// fingerprint is the exposed definition's JSON; a change re-registers it.
	fingerprint string
}

// DirectName is the client-safe name of a tool in direct mode before
// collisions are resolved: "server__tool" with every character outside
// [A-Za-z0-9_-] replaced by '_', cut to 64 characters with a hash suffix
// when longer. exact reports whether nothing was replaced or cut.
func DirectName(server, tool string) (name string, exact bool) {
	return prefixedName(server+config.PrefixSeparator, server, tool)
}

// prefixedName is DirectName with the server's configured prefix (see
// config.ServerConfig.NamePrefix) in place of "server__". The prefix ""
// promises the names as the server sends them, so they are kept whole,
// whatever their characters and length (issue 29: a name such as
// "ns.tool/with.dots" is valid MCP; a client that cannot take it is the
// reason for a prefix).
func prefixedName(prefix, server, tool string) (name string, exact bool) {
	if prefix == "" {
		return tool, true
	}
	raw := prefix + tool
	var b strings.Builder
	exact = true
	for _, r := range raw {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
			continue
		}
		b.WriteByte('_')
		exact = false
	}
	name = b.String()
	if len(name) > maxToolName {
		return withHash(name, config.ToolID(server, tool)), false
	}
	return name, exact
}

// withHash cuts name so that "_" plus an 8-hex-digit hash of id fits in 64
// characters, and appends it.
func withHash(name, id string) string {
	sum := sha256.Sum256([]byte(id))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	if len(name) > maxToolName-len(suffix) {
		name = name[:maxToolName-len(suffix)]
	}
	return name + suffix
}

// DirectNames assigns every tool id its exposed direct-mode name, resolving
// collisions deterministically: when several ids sanitize to the same name,
// the one whose name is exact keeps it (if exactly one is) and every other
// gets a hash suffix of its id. The result depends only on the set of ids.
func DirectNames(ids []string) map[string]string {
	out, _ := directNames(ids, func(s string) string { return s + config.PrefixSeparator }, nil)
	return out
}

// collision is a tool held back because an earlier server exposes one under
// the same name (possible only with configured prefixes).
type collision struct{ id, keeper, name string }

// directNames is DirectNames with per-server prefixes. When several ids map
// exactly to one name and one of them has a configured prefix (two servers
// with prefix "" and a tool of the same name), the id whose server ranks
// first (rank, lower first; nil = by id) keeps it and the others are
// withheld: left out of the result and reported.
func directNames(ids []string, prefix func(string) string, rank func(string) uint64) (map[string]string, []collision) {
	type cand struct {
		id    string
		exact bool
	}
	groups := map[string][]cand{}
	for _, id := range ids {
		server, tool, ok := config.SplitToolID(id)
		if !ok {
			continue
		}
		name, exact := prefixedName(prefix(server), server, tool)
		groups[name] = append(groups[name], cand{id, exact})
	}
	out := make(map[string]string, len(ids))
	var held []collision
	for name, cs := range groups {
		var exactIDs []string
		for _, c := range cs {
			if c.exact {
				exactIDs = append(exactIDs, c.id)
			}
		}
		if len(exactIDs) > 1 && slices.ContainsFunc(exactIDs, func(id string) bool {
			server, _, _ := config.SplitToolID(id)
			return prefix(server) != server+config.PrefixSeparator
		}) {
			// A configured prefix ("" above all) promises names as the
			// server sends them, so no hash suffix: the first keeps it.
			slices.SortFunc(exactIDs, func(a, b string) int {
				sa, _, _ := config.SplitToolID(a)
				sb, _, _ := config.SplitToolID(b)
				if rank != nil && rank(sa) != rank(sb) {
					return cmp.Compare(rank(sa), rank(sb))
				}
				return strings.Compare(a, b)
			})
			for _, id := range exactIDs[1:] {
				held = append(held, collision{id: id, keeper: exactIDs[0], name: name})
			}
			kept := cs[:0:0]
			for _, c := range cs {
				if !c.exact || c.id == exactIDs[0] {
					kept = append(kept, c)
				}
			}
			cs = kept
		}
		if len(cs) == 1 {
			out[cs[0].id] = name
			continue
		}
		exacts := 0
		for _, c := range cs {
			if c.exact {
				exacts++
			}
		}
		for _, c := range cs {
			if c.exact && exacts == 1 {
				out[c.id] = name
				continue
			}
			out[c.id] = withHash(name, c.id)
		}
	}
	slices.SortFunc(held, func(a, b collision) int { return strings.Compare(a.id, b.id) })
	return out, held
}

// syncDirect makes the exposed direct-mode tools match the catalog, adding,
// replacing and deleting only what changed. mcp-go sends tools/list_changed
// to every connected client on each change. Callers hold syncMu.
func (s *Server) syncDirect() {
	s.mu.RLock()
	tools := make([]config.Tool, 0, len(s.byID))
	for _, t := range s.byID {
		tools = append(tools, t)
	}
	s.mu.RUnlock()
	slices.SortFunc(tools, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })

	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.ID
	}
	names, held := directNames(ids, s.opts.Prefix, s.toolRank)
	for _, h := range held {
		s.logCollision(h)
	}
	for _, t := range tools {
		if name, ok := names[t.ID]; ok && name != s.opts.Prefix(t.Server)+t.Name {
			s.logRenamed(t, name)
		}
	}
	byName := make(map[string]string, len(names))
	for id, name := range names {
		byName[name] = id
	}
	s.mu.Lock()
	s.directIDs = byName
	s.mu.Unlock()

	want := make(map[string]bool, len(tools))
	var add []mcpserver.ServerTool
	for _, t := range tools {
		name, ok := names[t.ID]
		if !ok {
			continue // withheld: its name is taken
		}
		if _, mine := s.direct[name]; !mine && s.mcp.GetTool(name) != nil {
			// With a configured prefix ("" above all) an upstream tool can
			// take the name of one mcproxy serves itself (noa's Compress);
			// mcproxy's stays.
			s.logCollision(collision{id: t.ID, keeper: "mcproxy:" + name, name: name})
			continue
		}
		want[name] = true
		def := s.directTool(t, name)
		fp, err := json.Marshal(def)
		if err != nil {
			s.log.Warn("skipping tool whose definition cannot be encoded", zap.String("upstream", t.Server), zap.String("tool", t.Name), zap.Error(err))
			delete(want, name)
			continue
		}
		if old, ok := s.direct[name]; ok && old.fingerprint == string(fp) {
			continue
		}
		s.direct[name] = directEntry{fingerprint: string(fp)}
		add = append(add, mcpserver.ServerTool{Tool: def, Handler: s.directHandler(t.Server, t.Name)})
	}
	var del []string
	for name := range s.direct {
		if !want[name] {
			del = append(del, name)
		}
	}
	slices.Sort(del)
	for _, name := range del {
		delete(s.direct, name)
	}
	if len(del) > 0 {
		s.mcp.DeleteTools(del...)
	}
	if len(add) > 0 {
		s.mcp.AddTools(add...)
	}
}

// directTool is the exposed definition of t under name: the upstream's own
// definition (title, annotations, output schema) with the input schema
// exactly as the upstream sent it.
func (s *Server) directTool(t config.Tool, name string) mcp.Tool {
	def, ok := s.up.MCPTool(t.Server, t.Name)
	if !ok {
		def = mcp.Tool{Description: t.Description}
	}
	// def is a copy; only its top-level fields are replaced, nothing it
	// shares with the upstream's cached definition is written.
	def.Name = name
	def.InputSchema = mcp.ToolInputSchema{}
	def.RawInputSchema = schemaOrEmpty(t.Schema)
	return def
}

func (s *Server) directHandler(server, tool string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.waitStarted(ctx); err != nil {
			return nil, err
		}
		args := req.GetArguments()
		var argsJSON json.RawMessage
		if args != nil {
			argsJSON = req.Params.RawArguments
		}
		res, err := s.callUpstream(ctx, server, tool, args, argsJSON)
		return s.withNotice(ctx, res), err
	}
}

// toolRank orders servers by when their tools first arrived, so that of two
// servers exposing one name the earlier keeps it.
func (s *Server) toolRank(server string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, ok := s.arrival[server]; ok {
		return r
	}
	return ^uint64(0)
}

// logRenamed logs, once per tool and name, a tool exposed under another
// name than its prefix and its own: a character outside [A-Za-z0-9_-], a
// name over 64 characters, or a hash suffix that parts two names.
func (s *Server) logRenamed(t config.Tool, name string) {
	key := t.ID + "\x00" + name
	s.mu.Lock()
	if s.renamed == nil {
		s.renamed = map[string]bool{}
	}
	seen := s.renamed[key]
	s.renamed[key] = true
	s.mu.Unlock()
	if seen {
		return
	}
	s.log.Info(fmt.Sprintf("tool %q of server %q is exposed as %q: direct-mode names keep to [A-Za-z0-9_-] and %d characters, which every model API accepts, and two names that would meet get a hash suffix (set mcpServers.%s.prefix to \"\" to expose the server's names exactly)",
		t.Name, t.Server, name, maxToolName, t.Server),
		zap.String("upstream", t.Server), zap.String("tool", t.Name), zap.String("exposed_as", name))
}

// logCollision logs, once per pair, a tool withheld for its name.
func (s *Server) logCollision(h collision) {
	key := h.id + "\x00" + h.keeper
	s.mu.Lock()
	if s.collided == nil {
		s.collided = map[string]bool{}
	}
	seen := s.collided[key]
	s.collided[key] = true
	s.mu.Unlock()
	if seen {
		return
	}
	server, tool, _ := config.SplitToolID(h.id)
	keeper, _, _ := config.SplitToolID(h.keeper)
	s.log.Warn(fmt.Sprintf("tool %q of server %q collides with the tool server %q exposes as %q; %q keeps the name and this one is withheld (set mcpServers.%s.prefix to expose it under another name)",
		tool, server, keeper, h.name, keeper, server),
		zap.String("upstream", server), zap.String("tool", tool), zap.String("kept_by", keeper))
}
