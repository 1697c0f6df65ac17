package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/arms"
)

// SessionContextLimit is the model window the scripted session's nudges are
// paced against: small enough that a few dozen calls reach noa's nudge band,
// so the measurement stays quick. The nudges' wording does not depend on it.
const SessionContextLimit = 64000

// maxScriptedCalls bounds the scripted session; a session that has not
// nudged twice by then is an error (noa's pacing changed, or broke).
const maxScriptedCalls = 200

// maxDescribed bounds the describe_tool answers measured per corpus.
const maxDescribed = 100

// scriptedLines is how many lines ScriptedResult writes: about 1,500
// cl100k tokens.
const scriptedLines = 60

// ScriptedResult is the text the profiler's front answers every call_tool
// with (a frozen corpus cannot run its tools): a test log of about 1,500
// tokens naming the tool, the same for the same id. It stands for the
// mid-sized results that fill an agent's context.
func ScriptedResult(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ran the package tests\n", id)
	for i := range scriptedLines {
		fmt.Fprintf(&b, "=== RUN   TestHandler/case_%03d\n--- PASS: TestHandler/case_%03d (0.%02ds)\n", i, i, (i*37)%100)
	}
	b.WriteString("PASS\nok  \tgithub.com/example/service/handler\t1.284s\n")
	return b.String()
}

// measureSession prices what noa adds to a session through the front users
// get (listing arm a): the menu with noa on and off, a ref tag, the first
// nudge (which carries the compression rules) and a later one (which points
// back to them), from a scripted session of call_tool calls that each
// return ScriptedResult; and describe_tool's answers (every corpus tool, or
// an even sample of maxDescribed).
func measureSession(ctx context.Context, newFront FrontFactory, setup rankingSetup, tk arms.TokenCounter, a arms.Arm, c *Corpus) (SessionRow, error) {
	row := SessionRow{Corpus: c.Name, Arm: a.Name(), ContextLimit: SessionContextLimit, ResultTokens: tk.Count(ScriptedResult(c.Tools[0].ID))}
	off, err := frontMenu(ctx, newFront, setup, tk, a, c, FrontOptions{})
	if err != nil {
		return SessionRow{}, fmt.Errorf("noa off: %w", err)
	}
	row.NoaOff = off

	rank, err := setup.pipeline()
	if err != nil {
		return SessionRow{}, err
	}
	f, err := newFront(ctx, a, c.Tools, rank, FrontOptions{Noa: true, ContextLimit: SessionContextLimit, Count: tk.Count})
	if err != nil {
		return SessionRow{}, fmt.Errorf("starting front: %w", err)
	}
	defer f.Close()
	if row.NoaOn, err = menuCost(ctx, f, tk); err != nil {
		return SessionRow{}, err
	}
	var nudges []int
	for i := 0; i < maxScriptedCalls && len(nudges) < 2; i++ {
		id := c.Tools[i%len(c.Tools)].ID
		blocks, err := f.Call(ctx, id)
		if err != nil {
			return SessionRow{}, fmt.Errorf("call %d (%s): %w", i+1, id, err)
		}
		if len(blocks) < 2 || !strings.HasPrefix(blocks[1], "[m") {
			return SessionRow{}, fmt.Errorf("call %d (%s): no ref tag after the result (blocks %q)", i+1, id, blocks)
		}
		if row.RefTagTokens == 0 {
			row.RefTagTokens = tk.Count(blocks[1])
		}
		if last := blocks[len(blocks)-1]; len(blocks) > 2 && strings.HasPrefix(last, "[noa]") {
			nudges = append(nudges, i+1)
			if len(nudges) == 1 {
				row.FirstNudgeTokens, row.FirstNudgeCall = tk.Count(last), i+1
			} else {
				row.LaterNudgeTokens, row.LaterNudgeCall = tk.Count(last), i+1
			}
		}
	}
	if len(nudges) < 2 {
		return SessionRow{}, fmt.Errorf("the scripted session nudged %d times in %d calls; want 2", len(nudges), maxScriptedCalls)
	}
	// Every tool of a small corpus; of a large one, an even sample of
	// about maxDescribed (every step-th tool in id order).
	step := (len(c.Tools) + maxDescribed - 1) / maxDescribed
	counts := make([]int, 0, maxDescribed)
	for i := 0; i < len(c.Tools); i += step {
		t := c.Tools[i]
		text, err := f.Describe(ctx, t.ID)
		if err != nil {
			return SessionRow{}, fmt.Errorf("describe_tool %s: %w", t.ID, err)
		}
		counts = append(counts, tk.Count(text))
	}
	row.Describe = percentiles(counts)
	return row, nil
}

// frontMenu starts a front with o and prices its menu.
func frontMenu(ctx context.Context, newFront FrontFactory, setup rankingSetup, tk arms.TokenCounter, a arms.Arm, c *Corpus, o FrontOptions) (MenuCost, error) {
	rank, err := setup.pipeline()
	if err != nil {
		return MenuCost{}, err
	}
	f, err := newFront(ctx, a, c.Tools, rank, o)
	if err != nil {
		return MenuCost{}, fmt.Errorf("starting front: %w", err)
	}
	defer f.Close()
	return menuCost(ctx, f, tk)
}

// menuCost is the menu of f: its tools as listed, rendered like the
// baseline, and its instructions.
func menuCost(ctx context.Context, f Front, tk arms.TokenCounter) (MenuCost, error) {
	menu, instructions, err := f.Menu(ctx)
	if err != nil {
		return MenuCost{}, fmt.Errorf("listing the menu: %w", err)
	}
	text, err := arms.NewBaseline().EncodeListing(menu)
	if err != nil {
		return MenuCost{}, fmt.Errorf("rendering the menu: %w", err)
	}
	m := MenuCost{Tools: len(menu), ToolTokens: tk.Count(text), InstructionsTokens: tk.Count(instructions)}
	m.Tokens = m.ToolTokens + m.InstructionsTokens
	return m, nil
}
