package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/profile"
	"github.com/mcproxy/mcproxy/internal/server"
)

// ProfileRow is retrieval quality inside a profile (issue 31): the same
// queries ranked as a profile's endpoint serves them (the production
// front of the profile's tools over the one index of every tool,
// server.Options.SharedIndex) and by the full index with its ranking
// restricted to the profile's tools. The issue asks that they be equal;
// the report shows both and how many rankings are identical.
type ProfileRow struct {
	Corpus string `json:"corpus"`
	// Profile names the profile measured; Servers are the servers it
	// includes (config profiles.<name>.servers), Tools how many tools.
	Profile string   `json:"profile"`
	Servers []string `json:"servers"`
	Tools   int      `json:"tools"`
	// Served is what the profile's endpoint answers (server.Server.Retrieve
	// of its view); Restricted the full index, hits outside the profile
	// dropped. Both are scored on the queries whose relevance-2 tool is in
	// the profile, their labels kept to its tools.
	Served     Quality `json:"served"`
	Restricted Quality `json:"restricted"`
	// SameRankings counts the queries whose two rankings are identical.
	SameRankings int `json:"same_rankings"`
}

// Equal reports whether the two rankings agree on every query.
func (r ProfileRow) Equal() bool {
	return r.SameRankings == r.Served.Queries && r.Served == r.Restricted
}

// builtinProfile is the profile the profiler measures on corpus c: every
// other server in name order (the first, third, ...), a deterministic
// slice of any corpus with two servers or more.
func builtinProfile(c *Corpus) (string, config.ProfileConfig) {
	var servers []string
	for i, s := range c.Servers() { // sorted
		if i%2 == 0 {
			servers = append(servers, s)
		}
	}
	return "alternate-servers", config.ProfileConfig{Servers: servers}
}

// measureProfile scores retrieval inside the built-in profile of c under
// arm a, both ways (ProfileRow). It reports false when the profile would
// hold every tool or no query (nothing to compare).
func measureProfile(ctx context.Context, a arms.Arm, c *Corpus, qs NamedQuerySet, setup rankingSetup) (ProfileRow, bool, error) {
	name, pc := builtinProfile(c)
	row, ok, err := scoreProfile(ctx, a, c, qs, setup, name, pc)
	if ok && row.Tools == len(c.Tools) {
		return ProfileRow{}, false, nil
	}
	return row, ok, err
}

// scoreProfile scores retrieval inside profile pc (called name) of c, both
// ways; false when the profile holds no tool or no query.
func scoreProfile(ctx context.Context, a arms.Arm, c *Corpus, qs NamedQuerySet, setup rankingSetup, name string, pc config.ProfileConfig) (ProfileRow, bool, error) {
	m := profile.New(name, pc)
	var tools []config.Tool
	in := map[string]bool{}
	for _, t := range c.Tools {
		// Corpus tools carry no annotations; the profile selects by server.
		if m.Tool(t.Server, t.Name, mcp.ToolAnnotation{}) {
			tools = append(tools, t)
			in[t.ID] = true
		}
	}
	if len(tools) == 0 {
		return ProfileRow{}, false, nil
	}
	var queries []Query
	for _, q := range qs.Set.Queries {
		if !in[q.target()] {
			continue
		}
		q.Labels = slices.DeleteFunc(slices.Clone(q.Labels), func(l Label) bool { return !in[l.ToolID] })
		queries = append(queries, q)
	}
	if len(queries) == 0 {
		return ProfileRow{}, false, nil
	}
	served, err := servedRankings(ctx, a, c.Tools, tools, queries, setup)
	if err != nil {
		return ProfileRow{}, false, fmt.Errorf("profile %s, as its endpoint serves it: %w", name, err)
	}
	full, err := rankWith(ctx, a, c.Tools, queries, setup, len(c.Tools))
	if err != nil {
		return ProfileRow{}, false, fmt.Errorf("profile %s, the full index: %w", name, err)
	}
	row := ProfileRow{Corpus: c.Name, Profile: name, Servers: pc.Servers, Tools: len(tools)}
	for i := range full {
		full[i] = slices.DeleteFunc(full[i], func(id string) bool { return !in[id] })
		if slices.Equal(full[i], served[i]) {
			row.SameRankings++
		}
	}
	row.Served, row.Restricted = Score(queries, served), Score(queries, full)
	return row, true, nil
}

// rankWith ranks queries over an index of tools under arm a, at limit.
func rankWith(ctx context.Context, a arms.Arm, tools []config.Tool, queries []Query, setup rankingSetup, limit int) ([][]string, error) {
	p, err := setup.pipeline()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if _, err := ingest(ctx, p, a, tools); err != nil {
		return nil, err
	}
	return rankAll(ctx, p, queries, limit)
}

// servedRankings ranks queries as the endpoint of a profile holding tools
// serves them: the production front (internal/server) of those tools over
// one index of every tool in all (server.Options.SharedIndex), as a
// profile's view runs over mcproxy's one index, its Retrieve at the
// profile's size.
func servedRankings(ctx context.Context, a arms.Arm, all, tools []config.Tool, queries []Query, setup rankingSetup) ([][]string, error) {
	p, err := setup.pipeline()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if _, err := ingest(ctx, p, a, all); err != nil {
		return nil, err
	}
	view, err := server.New(server.Deps{Upstreams: &catalog{tools: tools}, Index: p}, server.Options{SharedIndex: true})
	if err != nil {
		return nil, fmt.Errorf("creating the profile's front: %w", err)
	}
	view.Resync()
	rankings := make([][]string, len(queries))
	for i, q := range queries {
		ms, err := view.Retrieve(ctx, q.Query, len(tools))
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		for _, m := range ms {
			rankings[i] = append(rankings[i], m.Tool.ID)
		}
	}
	return rankings, nil
}

// writeProfiles renders the profile rows.
func writeProfiles(b *strings.Builder, rows []ProfileRow) {
	b.WriteString("\n## Retrieval inside a profile\n\n")
	b.WriteString("The same queries (those whose tool is in the profile) ranked as a profile's endpoint serves them (its front over the one index of every tool) and by the full index with hits outside the profile dropped.\n\n")
	b.WriteString("| corpus | profile | index | queries | R@1 | R@3 | R@5 | R@10 | MRR | nDCG@10 | MAP |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		label := fmt.Sprintf("%s (%s; %s)", r.Profile, strings.Join(r.Servers, ", "), plural(r.Tools, "tool"))
		for _, v := range []struct {
			index string
			q     Quality
		}{{"served", r.Served}, {"full, restricted", r.Restricted}} {
			fmt.Fprintf(b, "| %s | %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.Corpus, label, v.index, v.q.Queries,
				v.q.RecallAt1, v.q.RecallAt3, v.q.RecallAt5, v.q.RecallAt10, v.q.MRR, v.q.NDCGAt10, v.q.MAP)
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		verdict := "equal"
		if !r.Equal() {
			verdict = "not equal"
		}
		fmt.Fprintf(b, "- %s, %s: %s; %d of %s ranked identically.\n", r.Corpus, r.Profile, verdict, r.SameRankings, plural(r.Served.Queries, "query"))
	}
}
