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
	// Close stops the front.
	Close() error
}

// FrontFactory starts a front serving tools, indexed and rendered under arm
// a, the way mcproxy does when a is its configured listing arm, ranking with
// rank (empty: the front feeds it the tools). The front owns rank: its Close
// closes it, also when starting fails.
type FrontFactory func(ctx context.Context, a arms.Arm, tools []config.Tool, rank *retrieval.Pipeline) (Front, error)

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
	f, err := newFront(ctx, a, c.Tools, rank)
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("starting front: %w", err)
	}
	defer f.Close()

	menu, instructions, err := f.Menu(ctx)
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("listing the menu: %w", err)
	}
	// The menu and the up-front load are priced with the same renderer as
	// the baseline, so the comparison is like for like.
	menuText, err := arms.NewBaseline().EncodeListing(menu)
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("rendering the menu: %w", err)
	}
	upfront, err := arms.NewBaseline().EncodeListing(c.Tools)
	if err != nil {
		return DiscoveryRow{}, fmt.Errorf("rendering every tool: %w", err)
	}
	row := DiscoveryRow{
		Corpus:             c.Name,
		Arm:                a.Name(),
		MenuToolTokens:     tk.Count(menuText),
		InstructionsTokens: tk.Count(instructions),
		UpfrontTokens:      tk.Count(upfront),
	}
	row.MenuTokens = row.MenuToolTokens + row.InstructionsTokens
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
