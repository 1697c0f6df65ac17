package bench

import (
	"context"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/retrieval"
)

// Front is mcproxy's MCP front as the discovery measurement sees it: what a
// client receives when it lists tools, and the text retrieve_tools answers.
type Front interface {
	// Menu returns the tools the front exposes (the meta tools in retrieve
	// mode) and the server instructions sent at initialize; both sit in the
	// model's context for the whole session.
	Menu(ctx context.Context) (tools []config.Tool, instructions string, err error)
	// Retrieve returns retrieve_tools' answer text for query at limit.
	Retrieve(ctx context.Context, query string, limit int) (string, error)
	// Describe returns describe_tool's answer text for one tool id.
	Describe(ctx context.Context, id string) (string, error)
	// Call runs a tool through call_tool and returns the answer's text
	// blocks: the result, then (with noa) its ref tag and any nudge.
	Call(ctx context.Context, id string) ([]string, error)
	// Close stops the front.
	Close() error
}

// FrontFactory starts a front serving tools, rendered under arm a, the way
// mcproxy does when a is its configured listing arm, ranking with rank
// (empty: the front feeds it the tools). The front owns rank: its Close
// closes it, also when starting fails.
type FrontFactory func(ctx context.Context, a arms.Arm, tools []config.Tool, rank *retrieval.Pipeline, o FrontOptions) (Front, error)

// FrontOptions say which front to start.
type FrontOptions struct {
	// Noa runs every session through noa, as mcproxy does by default:
	// Compress and read_archive join the menu, noa's part joins the
	// instructions, and call_tool results carry ref tags and nudges.
	Noa bool
	// ContextLimit is the window noa paces nudges against; zero means
	// SessionContextLimit.
	ContextLimit int
	// Count counts tokens for noa; nil means noa's estimate.
	Count func(string) int
}

// DiscoveryLimits are the retrieve_tools limits the answers are measured at.
var DiscoveryLimits = []int{5, 15}

// measureDiscovery prices discovery under arm a, ranked as the retrieval
// quality rows rank (setup): the standing cost of the
// menu, the per-call cost of retrieve_tools answers, and how many calls it
// takes before discovery costs more than loading every tool up front.
func measureDiscovery(ctx context.Context, newFront FrontFactory, setup rankingSetup, tk arms.TokenCounter, a arms.Arm, c *Corpus, queries []Query) (DiscoveryRow, error) {
	rank, err := setup.pipeline()
	if err != nil {
		return DiscoveryRow{}, err
	}
	f, err := newFront(ctx, a, c.Tools, rank, FrontOptions{Noa: true, Count: tk.Count})
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("starting front: %w", err)
	}
	defer f.Close()

	menu, err := menuCost(ctx, f, tk)
	if err != nil {
		return DiscoveryRow{}, err
	}
	// The up-front load is priced with the same renderer as the menu, so
	// the comparison is like for like.
	upfront, err := arms.NewBaseline().EncodeListing(c.Tools)
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("rendering every tool: %w", err)
	}
	row := DiscoveryRow{
		Corpus:             c.Name,
		Arm:                a.Name(),
		MenuTokens:         menu.Tokens,
		MenuToolTokens:     menu.ToolTokens,
		InstructionsTokens: menu.InstructionsTokens,
		UpfrontTokens:      tk.Count(upfront),
	}
	for _, limit := range DiscoveryLimits {
		counts := make([]int, 0, len(queries))
		for _, q := range queries {
			text, err := f.Retrieve(ctx, q.Query, limit)
			if err != nil {
				return DiscoveryRow{}, fmt.Errorf("query %s at limit %d: %w", q.ID, limit, err)
			}
			counts = append(counts, tk.Count(text))
		}
		s := percentiles(counts)
		row.Answers = append(row.Answers, AnswerCost{Limit: limit, Queries: len(counts), Spread: s, BreakEvenCalls: breakEven(row.UpfrontTokens, row.MenuTokens, s.Mean)})
	}
	return row, nil
}

// breakEven is how many retrieve_tools calls of mean answer size fit in the
// tokens saved by not loading every tool: (upfront - menu) / answer. Fewer
// calls than that and discovery is cheaper. 0 when the menu alone costs as
// much as the whole catalog, or answers are empty.
func breakEven(upfront, menu int, answer float64) float64 {
	if answer <= 0 || upfront <= menu {
		return 0
	}
	return round2(float64(upfront-menu) / answer)
}
