package bench

import (
	"fmt"
	"html"
	"strings"
)

// Markdown renders the report as tables for people (report.md).
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# mcproxy bench report\n\n")
	fmt.Fprintf(&b, "Generated %s · tokenizer `%s` · report schema v%d\n\n", orDash(r.GeneratedAt), r.Tokenizer, r.SchemaVersion)
	if r.UserSynonymGroups > 0 {
		fmt.Fprintf(&b, "Synonym groups from --config: %d, beside the built-in lexicon\n\n", r.UserSynonymGroups)
	}
	if r.QueryExpansion != "" {
		fmt.Fprintf(&b, "Query expansion: %s\n\n", mdEscape(r.QueryExpansion))
	}

	b.WriteString("## Corpora\n\n| corpus | version | tools | servers | query set | queries (tune / heldout) |\n|---|---|---:|---:|---|---|\n")
	for _, c := range r.Corpora {
		q := "—"
		if c.QuerySet != "" {
			q = fmt.Sprintf("%d (%d / %d)", c.Queries, c.TuneQueries, c.HeldoutQueries)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s |\n", c.Name, orDash(c.Version), c.Tools, c.Servers, orDash(c.QuerySet), q)
	}

	for _, c := range r.Corpora {
		fmt.Fprintf(&b, "\n## Tokens: %s\n\n", c.Name)
		b.WriteString("Per tool = each tool encoded alone; listing = all tools in one answer. Savings are against `baseline_json` over the same tools; negative means the arm costs more.\n\n")
		b.WriteString("| arm | tools | total | mean | p95 | listing | savings/tool | savings/listing | notes |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, a := range r.Arms {
			if a.Corpus != c.Name {
				continue
			}
			if a.Status != StatusMeasured {
				fmt.Fprintf(&b, "| %s | — | — | — | — | — | — | — | skipped: %s |\n", a.Name, mdEscape(a.UnavailableReason))
				continue
			}
			var notes []string
			if a.LowerBound {
				notes = append(notes, "lower bound (descriptions rewritten)")
			}
			if len(a.Skipped) > 0 {
				notes = append(notes, "skipped "+plural(len(a.Skipped), "tool"))
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %d | %d | %s | %s | %s |\n", a.Name, a.Tools, a.TotalTokens, a.MeanTokens, a.P95Tokens,
				a.ListingTokens, pct(a.SavingsPct), pct(a.ListingSavingsPct), strings.Join(notes, "; "))
		}
		b.WriteString("\nHeaviest tools per arm:\n\n")
		for _, a := range r.Arms {
			if a.Corpus != c.Name || a.Status != StatusMeasured {
				continue
			}
			parts := make([]string, len(a.Heaviest))
			for i, h := range a.Heaviest {
				parts[i] = fmt.Sprintf("`%s` %d", h.ToolID, h.Tokens)
			}
			fmt.Fprintf(&b, "- %s: %s\n", a.Name, orDash(strings.Join(parts, ", ")))
		}
		for _, a := range r.Arms {
			if a.Corpus != c.Name {
				continue
			}
			for _, s := range a.Skipped {
				fmt.Fprintf(&b, "- %s skipped `%s`: %s\n", a.Name, s.ToolID, mdEscape(s.Reason))
			}
		}

		if c.QuerySet != "" {
			fmt.Fprintf(&b, "\n## Retrieval quality: %s\n\n", c.Name)
			fmt.Fprintf(&b, "Query set `%s`, %d queries. Production index (internal/index) built from each arm's index metadata; recall@k counts the relevance-2 tool in the top k.\n\n", c.QuerySet, c.Queries)
			b.WriteString("| arm | queries | R@1 | R@3 | R@5 | R@10 | MRR | nDCG@10 | MAP |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, a := range r.Arms {
				if a.Corpus != c.Name || a.Quality == nil {
					continue
				}
				writeQualityRow(&b, a.Name, "all", *a.Quality)
				for _, split := range []string{SplitTune, SplitHeldout} {
					if q, ok := a.QualityBySplit[split]; ok {
						writeQualityRow(&b, a.Name, split, q)
					}
				}
			}
			for _, a := range r.Arms {
				if a.Corpus != c.Name || a.Quality == nil {
					continue
				}
				if len(a.MissesAt5) == 0 {
					fmt.Fprintf(&b, "\n%s: every query has its tool in the top 5.\n", a.Name)
					continue
				}
				fmt.Fprintf(&b, "\n<details><summary>%s: %s without their tool in the top 5</summary>\n\n", a.Name, plural(len(a.MissesAt5), "query"))
				for _, m := range a.MissesAt5 {
					rank := "not retrieved"
					if m.Rank > 0 {
						rank = fmt.Sprintf("rank %d", m.Rank)
					}
					fmt.Fprintf(&b, "- %s (%s) %q: want `%s`, %s; top: %s\n", m.QueryID, orDash(m.Split), m.Query, m.Want, rank, codeList(m.Top))
				}
				b.WriteString("\n</details>\n")
			}
		}

		writeAblation(&b, r.Ablation, c.Name)

		var disc []DiscoveryRow
		for _, d := range r.Discovery {
			if d.Corpus == c.Name {
				disc = append(disc, d)
			}
		}
		if len(disc) > 0 {
			fmt.Fprintf(&b, "\n## Discovery cost: %s\n\n", c.Name)
			fmt.Fprintf(&b, "Menu = mcproxy's tools as listed (retrieve_tools, call_tool, describe_tool and noa's Compress and read_archive) plus its initialize instructions (%d + %d tokens). Up front = every tool in the baseline rendering (%d tokens). Answers are real retrieve_tools results from the production front over the query set. Break-even = (up front − menu) / mean answer: fewer retrieve_tools calls than that and discovery is cheaper.\n\n",
				disc[0].MenuToolTokens, disc[0].InstructionsTokens, disc[0].UpfrontTokens)
			b.WriteString("| listing arm | menu | up front |")
			for _, lim := range DiscoveryLimits {
				fmt.Fprintf(&b, " answer@%d p50 / p95 / max | break-even@%d |", lim, lim)
			}
			b.WriteString("\n|---|---:|---:|")
			for range DiscoveryLimits {
				b.WriteString("---:|---:|")
			}
			b.WriteString("\n")
			for _, d := range disc {
				fmt.Fprintf(&b, "| %s | %d | %d |", d.Arm, d.MenuTokens, d.UpfrontTokens)
				for _, a := range d.Answers {
					fmt.Fprintf(&b, " %d / %d / %d | %.1f |", a.P50, a.P95, a.Max, a.BreakEvenCalls)
				}
				b.WriteString("\n")
			}
		}
	}

	writeSessions(&b, r.Sessions)

	if t := r.ToonResults; t != nil {
		fmt.Fprintf(&b, "\n## Tool results: TOON vs compact JSON (%s)\n\n", t.Fixtures)
		b.WriteString("| encoding | payloads | total | mean | p95 | savings |\n|---|---:|---:|---:|---:|---:|\n")
		for _, row := range t.Rows {
			fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %d | %s |\n", row.Name, row.Payloads, row.TotalTokens, row.MeanTokens, row.P95Tokens, pct(row.SavingsPct))
		}
		fmt.Fprintf(&b, "\nTabular payloads: %d → %d tokens (%s). Non-tabular payloads: %d → %d tokens (%s).\n",
			t.TabularJSONTokens, t.TabularToonTokens, pct(t.TabularSavingsPct), t.NonTabularJSONTokens, t.NonTabularToonTokens, pct(t.NonTabularSavingsPct))
		for _, row := range t.Rows {
			for _, s := range row.Skipped {
				fmt.Fprintf(&b, "- %s skipped `%s`: %s\n", row.Name, s.ToolID, mdEscape(s.Reason))
			}
		}
	}
	if len(r.Profiles) > 0 {
		writeProfiles(&b, r.Profiles)
	}
	if len(r.Learning) > 0 {
		b.WriteString("\n## Learning from use\n\n")
		b.WriteString("Each pair is one need phrased twice. The first phrasings are searched as an agent would (a miss is followed by a search in the tool's own words, then the call); then the later phrasings are scored. Noise: that share of episodes ends at a wrong tool. Standard: the corpus's query set, before → after.\n\n")
		b.WriteString(LearnMarkdown(r.Learning))
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func writeQualityRow(b *strings.Builder, arm, split string, q Quality) {
	fmt.Fprintf(b, "| %s | %s (%d) | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", arm, split, q.Queries,
		q.RecallAt1, q.RecallAt3, q.RecallAt5, q.RecallAt10, q.MRR, q.NDCGAt10, q.MAP)
}

// plural writes "1 tool", "2 tools", "1 query", "3 queries".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func pct(x float64) string { return fmt.Sprintf("%+.1f%%", x) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func codeList(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "`" + id + "`"
	}
	return strings.Join(parts, ", ")
}

// mdEscape keeps free text from breaking a table row.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// SVG draws, per corpus, the listing tokens of each arm as bars (with the
// saving against the baseline) and, beside them, recall@5 and MRR of each
// arm with a quality measurement. Plain SVG, no scripts or fonts to fetch.
func (r *Report) SVG() string {
	const (
		width   = 960
		rowH    = 26
		leftW   = 120 // arm labels
		barW    = 330 // token bars
		qualX   = 620 // quality panel start
		qualW   = 240
		headerH = 64
	)
	type panel struct {
		corpus string
		rows   []ArmRow
	}
	var panels []panel
	for _, c := range r.Corpora {
		p := panel{corpus: c.Name}
		for _, a := range r.Arms {
			if a.Corpus == c.Name {
				p.rows = append(p.rows, a)
			}
		}
		panels = append(panels, p)
	}
	height := 56
	for _, p := range panels {
		height += headerH + rowH*len(p.rows) + 24
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="16" y="28" font-size="18" font-weight="bold">mcproxy bench: tokens and retrieval quality per arm</text>`+"\n")
	fmt.Fprintf(&b, `<text x="16" y="46" fill="#555">tokenizer %s · listing tokens (shorter is cheaper) · recall@5 and MRR on a 0–1 scale (longer is better)</text>`+"\n", html.EscapeString(r.Tokenizer))
	y := 56
	for _, p := range panels {
		fmt.Fprintf(&b, `<text x="16" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", y+22, html.EscapeString(p.corpus))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">listing tokens (savings vs baseline_json)</text>`+"\n", leftW+16, y+44)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555"><tspan fill="#2b6cb0">■</tspan> recall@5  <tspan fill="#dd6b20">■</tspan> MRR</text>`+"\n", qualX, y+44)
		maxTokens := 1
		for _, a := range p.rows {
			maxTokens = max(maxTokens, a.ListingTokens)
		}
		y += headerH
		for _, a := range p.rows {
			fmt.Fprintf(&b, `<text x="16" y="%d">%s</text>`+"\n", y+17, html.EscapeString(a.Name))
			if a.Status != StatusMeasured {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999">skipped: runtime unavailable</text>`+"\n", leftW+16, y+17)
				y += rowH
				continue
			}
			w := barW * a.ListingTokens / maxTokens
			color := "#718096"
			if a.Name != "baseline_json" {
				color = "#38a169"
				if a.ListingSavingsPct < 0 {
					color = "#e53e3e"
				}
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="18" fill="%s"/>`+"\n", leftW+16, y+4, max(w, 1), color)
			label := fmt.Sprintf("%d", a.ListingTokens)
			if a.Name != "baseline_json" {
				label += " (" + pct(a.ListingSavingsPct) + ")"
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", leftW+22+max(w, 1), y+17, label)
			if a.Quality != nil {
				r5 := int(float64(qualW) * a.Quality.RecallAt5)
				mrr := int(float64(qualW) * a.Quality.MRR)
				// Light tracks mark the 0..1 scale so a bar's length reads as a fraction.
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="18" fill="#edf2f7"/>`+"\n", qualX, y+4, qualW)
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="8" fill="#2b6cb0"/>`+"\n", qualX, y+4, max(r5, 1))
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="8" fill="#dd6b20"/>`+"\n", qualX, y+14, max(mrr, 1))
				fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%.2f / %.2f</text>`+"\n", qualX+qualW+8, y+17, a.Quality.RecallAt5, a.Quality.MRR)
			} else {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#999" font-size="12">no quality measurement</text>`+"\n", qualX, y+17)
			}
			y += rowH
		}
		y += 24
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// writeAblation renders corpus's ablation rows, if any.
func writeAblation(b *strings.Builder, rows []AblationRow, corpus string) {
	var mine []AblationRow
	for _, a := range rows {
		if a.Corpus == corpus {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Retrieval ablation: %s\n\n", corpus)
	b.WriteString("Each row is the production index (baseline_json metadata) with one change. R@5 = relevance-2 tool in the top 5. Levers were chosen on the tune half only.\n\n")
	b.WriteString("| variant | change | tune R@5 | tune MRR | heldout R@5 | heldout MRR | all R@5 | all MRR |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range mine {
		if a.Status != StatusMeasured || a.Quality == nil {
			fmt.Fprintf(b, "| %s | %s | — | — | — | — | — | — |\n", a.Variant, mdEscape(a.Change+" (not measured: "+a.UnavailableReason+")"))
			continue
		}
		cell := func(split string) string {
			q, ok := a.QualityBySplit[split]
			if !ok {
				return "— | —"
			}
			return fmt.Sprintf("%.3f | %.3f", q.RecallAt5, q.MRR)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.3f | %.3f |\n", a.Variant, mdEscape(a.Change), cell(SplitTune), cell(SplitHeldout), a.Quality.RecallAt5, a.Quality.MRR)
	}
}

// writeSessions renders the session costs, one row per corpus.
func writeSessions(b *strings.Builder, rows []SessionRow) {
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Session costs\n\n")
	fmt.Fprintf(b, "What a session pays beyond the retrieve_tools answers, through the front users get, under the default listing arm. Menu = tools/list rendered like the baseline + initialize instructions. Nudges come from a scripted session of call_tool calls (each result %d tokens, window %d tokens): the first nudge carries the compression rules, later ones name the ranges and the pressure and point back to them. describe_tool = one tool's answer, over every corpus tool (an even sample of 100 in a larger corpus).\n\n",
		rows[0].ResultTokens, rows[0].ContextLimit)
	b.WriteString("| corpus | arm | menu, noa on (tools + instructions) | menu, noa off | ref tag | first nudge (call) | later nudge (call) | describe_tool p50 / max |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range rows {
		fmt.Fprintf(b, "| %s | %s | %d (%d + %d) | %d (%d + %d) | %d | %d (%d) | %d (%d) | %d / %d |\n", s.Corpus, s.Arm,
			s.NoaOn.Tokens, s.NoaOn.ToolTokens, s.NoaOn.InstructionsTokens,
			s.NoaOff.Tokens, s.NoaOff.ToolTokens, s.NoaOff.InstructionsTokens,
			s.RefTagTokens, s.FirstNudgeTokens, s.FirstNudgeCall, s.LaterNudgeTokens, s.LaterNudgeCall,
			s.Describe.P50, s.Describe.Max)
	}
}
