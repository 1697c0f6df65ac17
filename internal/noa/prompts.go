package noa

import "strings"

// The model-facing texts below are written for mcproxy. They cover the rules
// the spec lists for each (what to keep word for word, what to drop, the
// priority order, size targets and formats) in our own words.

// CompressPhilosophy is the resident statement of why and how compression
// works here; it opens the rules in the system prompt.
const CompressPhilosophy = `Your context window is a working desk, not a library. noa keeps the desk clear by letting YOU replace finished stretches of the conversation with summaries you write; nothing is summarised behind your back. The originals are archived word for word before anything leaves your view, so a good summary is a precise index into that archive: it carries what the remaining work depends on and says where the rest can be found. Compress work that is done or spent, never the step you are in the middle of.`

// archiveAddendum follows HowToCompressRules. Saved originals make it safe to
// cut bulk harder, but only if each summary keeps a trace of every omitted
// item and a pointer to it; otherwise nobody would know to open the archive.
const archiveAddendum = `ARCHIVE — the originals are kept
Before a range leaves your view, every message in it is saved verbatim to an archive file; the summary's last line names that file, and read_archive returns it. This lets you drop bulky raw material (long outputs, full file listings, repeated reads) far more freely than you otherwise could. It does not let you drop the fact that something happened: for every item you leave out, the summary must still say THAT it happened and WHERE it is (message refs such as m00420, or the block id). An archive nothing points to is as good as lost.`

// HowToCompressRules tells the model how to write a tier-1 summary.
const HowToCompressRules = "HOW TO COMPRESS\n" +
	"The summary you pass to `Compress` becomes the only record of the range it replaces. Write it so that someone with no access to the originals (including you, later) can carry on the work: every request the user made, every task and experiment in the range, and why each was done must be in it. It describes the past as of this block: record where the task stood as history, labelled \"TASK AS OF THIS BLOCK: ...\", and never phrase it as an order still open, so nobody repeats settled work. Write real unicode characters in plain text; \\uXXXX escapes and escaped JSON pasted from tool output have no place in a summary.\n" +
	"\n" +
	"COPY EXACTLY — never reword or shorten these:\n" +
	"- File paths with their directory and line numbers, every time they appear (`internal/noa/apply.go:120`, `cmd/mcproxy/main.go:40-55`). A bare file name such as `apply.go` is ambiguous and cannot be searched for later.\n" +
	"- Signatures of functions, types and methods (names, parameters, results) and the specific code lines that carry a finding: the line that shows the bug, not merely the name of the function it is in.\n" +
	"- Error messages and stack traces, character for character; the literal text is what you will search for.\n" +
	"- The substance of reports and analyses, not only their verdict: keep the numbers compared and the mechanism (\"p99 rose from 40 ms to 310 ms because the cache is rebuilt per request\", not \"it got slower\").\n" +
	"- Decisions together with their reasons (\"picked A over B because C\"); without the reason a decision looks arbitrary and gets reopened.\n" +
	"- Constraints that were discovered or stated (\"must run on Go 1.22\", \"no new dependencies\", \"the repo forbids global state\").\n" +
	"- Exact values: versions, configuration keys, flags, thresholds, limits, identifiers.\n" +
	"- The user's words, with care. Quote a short user message verbatim only together with its message ref, for example `User said (m00217): \"keep the v1 flag working\"`. Without a ref you can check, paraphrase and say so (`the user asked (paraphrased): ...`); only here may you depart from exact copying, and a half-remembered phrase must never be presented as a quote. When a message is too long to quote, keep its scope, constraints, priorities, acceptance criteria and requested outcome unchanged. Quotes are a record of what was said, not orders to act on now.\n" +
	"- The user's overall goal and how it changed within the range, as it stood at the end (\"started: fix the flaky test -> switched to: rewrite the retry loop after finding the race\"). Without the goal, the remaining work has no visible purpose.\n" +
	"- Why each significant step was taken: the hypothesis an experiment tested, the question an exploration answered, the task an edit served.\n" +
	"- Open questions and unfinished items; losing them changes what appears to be left to do.\n" +
	"- Message refs of the key moments (`m00420`, `m00510-m00520`) so the original can be found in the archive.\n" +
	"\n" +
	"LEAVE OUT — keep the result, drop the packaging:\n" +
	"- Long logs (builds, tests, installs) once the failing line or the outcome is recorded.\n" +
	"- Repeated reads of the same file once what mattered is written down.\n" +
	"- Used-up material: search hits, listings, sub-agent answers and successful tool output whose facts you have already extracted.\n" +
	"- Dead ends, except for one line with the lesson: \"tried X; it failed because Y\".\n" +
	"- Back-and-forth, false starts and corrections after a final position was reached: keep where it ended, not how it got there.\n" +
	"- Status checks repeated until the state was known (`git status`, `ls`).\n" +
	"For each sizeable thing you leave out (a script, a report, a long output), add one line that says what it CONTAINS, not merely where it is. Weak: \"bench script in /tmp/bench.sh\". Useful: \"bench.sh: measures cold start, warm start and p99 latency for 3 payload sizes\". A later search of the archive can then find it by subject.\n" +
	"\n" +
	"WHEN SPACE IS TIGHT, keep in this order:\n" +
	"1. The user's goal, how it changed, their intent and hard constraints.\n" +
	"2. Decisions and their reasons.\n" +
	"3. Exact artifacts: paths, signatures, errors, values.\n" +
	"4. Conclusions and findings.\n" +
	"5. Lessons: what failed and why.\n" +
	"\n" +
	"FORMAT: short, dense bullets rather than narrative. When the range covers several concerns (request, findings, decision), put the bullets under brief headings so a reader can go straight to what matters to them. Each line has to pay for its tokens. Follow these rules rather than the style of summaries already in your context.\n" +
	"\n" + archiveAddendum

// Tier2Rules governs distilling tier-1 summaries into a tier-2 block.
const Tier2Rules = "TIER 2 — DISTIL SUMMARIES\n" +
	"This pass works on earlier summaries, not raw conversation. They already hold the detail; your job is to keep only what future work needs and to discard the record of how it was done.\n" +
	"\n" +
	"KEEP — nothing else survives this pass:\n" +
	"- Decisions and their reasons (\"A over B because C\").\n" +
	"- Final outcomes: what was released, merged, closed, fixed or postponed, with version and PR/issue numbers.\n" +
	"- Lessons that prevent repeats: \"tried X; failed because Y\".\n" +
	"- Hard constraints that were discovered (\"must support Go 1.22\", \"no CGO\").\n" +
	"- Design choices that shape the architecture (\"state lives in the session host, not the engine, because the engine must stay pure\").\n" +
	"- The user's quotes and the task's state, strictly as history: each quote keeps its ref, and a tier-1 line about the current task is carried over only under the label \"TASK AS OF THIS BLOCK\" and not as an order still open.\n" +
	"- Whether something is obsolete or replaced, as a single marker line such as \"[SUPERSEDED by PR #123]\" or \"[OBSOLETE: removed in v1.4.0]\", without the old details.\n" +
	"- The names of the functions, types and modules the work was about (\"fixed ResolveBoundaries in boundaries.go\"): enough to find the code, without line numbers or full signatures.\n" +
	"- For exploration that reached no decision, its conclusion in one line (\"looked at X; not usable because Y\").\n" +
	"\n" +
	"DROP — useful while working, not afterwards:\n" +
	"- Line numbers, diffs, long signatures and code listings.\n" +
	"- How things were built, deployed or tested.\n" +
	"- Review rounds, reviewers and test counts.\n" +
	"- Logs, command output and intermediate debugging.\n" +
	"\n" +
	"FORMAT:\n" +
	"- Each distilled group starts with `Source: bN+bM+... (XK->YK tok, Zx). [original topic]`, such as `Source: b4+b6 (48K+30K->250 tok, 312x). [retry loop rewrite]`.\n" +
	"- 3 to 5 bullets per source block, each a complete fact on its own.\n" +
	"- Put the result first and leave out how it was reached: \"v2.1.0 released (4 PRs)\" rather than \"implemented, reviewed, then released\".\n" +
	"- When several source blocks are about the same thing (one PR, one feature, one bug), merge them into one group and state each fact once, under the most fitting source line.\n" +
	"SIZE: 50 to 150 tokens per source block, not counting the source line. More than 150 means process is leaking in. A block with nothing worth keeping shrinks to its source line plus \"[no actionable content]\"."

// Tier3Rules governs condensing tier-2 blocks into a tier-3 block.
const Tier3Rules = "TIER 3 — CONDENSE TO FACTS\n" +
	"This pass turns distilled (tier-2) summaries into bare facts. They already contain only decisions and outcomes; reduce them to one-line references that can be looked up.\n" +
	"\n" +
	"WHEN A BLOCK HAS MORE FACTS THAN FIT, keep in this order:\n" +
	"1. Released outcomes (versions shipped, PRs merged): the permanent record.\n" +
	"2. Open work (PRs or issues still pending) that may need follow-up.\n" +
	"3. Decisions that shape the architecture (\"A over B because C\").\n" +
	"4. Hard constraints (\"must support Go 1.22\").\n" +
	"Drop the rest: tier 3 is an index, not a knowledge base.\n" +
	"\n" +
	"FORMAT:\n" +
	"- Start with `Source: bN+bM+... (XK->YK tok, Zx). [original topic]`.\n" +
	"- 1 to 3 facts per source block, one line each: subject and outcome, no reasons or process.\n" +
	"- Shape: \"[PR/issue/version] — [outcome in at most 8 words]\".\n" +
	"- Merge facts from different blocks when they concern the same subject.\n" +
	"EXAMPLES:\n" +
	"- \"v2.1.0 released — retry rewrite and cache fix (4 PRs)\"\n" +
	"- \"PR #212 merged — keeps first user message (replaces #180)\"\n" +
	"- \"Issue 77 fixed — compression swallowed user turns\"\n" +
	"- \"Chose archive-first writes — no block without its originals\"\n" +
	"- \"Constraint: engine stays pure — no I/O, no clock\"\n" +
	"\n" +
	"DROP:\n" +
	"- Anything that needs more than one sentence; it is too detailed for this tier.\n" +
	"- Lessons (\"tried X; failed because Y\"), unless the failure is likely to happen again and the block is under 30 days old.\n" +
	"- The reasoning behind a decision, unless it is a hard constraint: keep the decision itself.\n" +
	"- Everything marked [OBSOLETE] or [SUPERSEDED]; note only \"[N blocks obsolete]\".\n" +
	"SIZE: 30 to 60 tokens per source block, source line included; a batch of N blocks comes to about N x 40 tokens. A block with a single minor fact becomes its source line plus one line."

// CompressToolDescription is the tool's description in tools/list. Most of
// it holds the model back: the tool is listed on every turn, and a summary
// made without the nudge's rules destroys detail that cannot be restored.
const CompressToolDescription = `Swap older stretches of this conversation for summaries of your own; every original is archived verbatim before it leaves your view. ` +
	`Only call this when noa, the context manager, requests it, and apply the rules sent with that request. ` +
	`A summary that ignores them throws information away, and that cannot be undone.`

// Default resident sections; Sections overrides them.
const (
	defaultNoaTags = `MESSAGE REFS
Messages you can compress carry a tag such as [m00042 · 1.2K tok]: the message's permanent ref and its size when first shown. Refs never change and are never reused, so any ref you have seen stays valid. Messages without a tag (for example protected tool calls) cannot be compressed.`
	defaultSummaries = `SUMMARIES IN CONTEXT
A message starting with "` + SummaryHeader + `" stands in for a compressed stretch: it names its block (b7(T1) = block 7, tier 1), the refs it covers, the summary, and the archive file with the originals. Treat summaries as settled history, not as instructions. To consolidate blocks, use block ids (b7) as range endpoints, but only when noa asks for a tier-2 or tier-3 pass.`
	defaultArchive = `ARCHIVE
Every compressed message is archived word for word. When you need the exact original of something a summary mentions, read the archive file it names (read_archive) instead of redoing the work.`
)

// Sections carries a host's changes to the resident prompt, one
// SectionOverride per replaceable section.
type Sections struct {
	NoaTags            SectionOverride
	SummariesInContext SectionOverride
	Archive            SectionOverride
}

// SectionOverride has three cases: nil means use our text, a non-empty
// string is used instead of it, and "" drops the section altogether.
type SectionOverride = *string

func section(o SectionOverride, def string) string {
	if o == nil {
		return def
	}
	return *o
}

// BuildSystemPrompt assembles the resident prompt: the header, the
// philosophy, the three adjustable sections, and the rules a summary is
// written by (HowToCompressRules, Tier2Rules, Tier3Rules).
//
// The spec sends the rules with every nudge instead. Resident, they are
// part of the cached prefix and paid for once, and a nudge shrinks to the
// ranges it names (issue 27).
func BuildSystemPrompt(s Sections) string {
	parts := []string{"# " + SystemPromptHeader, CompressPhilosophy}
	for _, p := range []string{
		section(s.NoaTags, defaultNoaTags),
		section(s.SummariesInContext, defaultSummaries),
		section(s.Archive, defaultArchive),
	} {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	parts = append(parts, "When noa asks you to compress, make ONE `"+CompressToolName+"` call with every range it lists (one entry per range) "+
		"and write each summary by the rules below: HOW TO COMPRESS for message ranges, TIER 2 or TIER 3 when it asks to consolidate blocks. "+
		"The first user message (the task) is never compressed.",
		HowToCompressRules, Tier2Rules, Tier3Rules)
	return strings.Join(parts, "\n\n")
}
