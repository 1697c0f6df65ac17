package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// SchemaVersion is the version of the report's JSON shape.
const SchemaVersion = 2

// Acceptance thresholds (issue 27).
const (
	// MaxCostAt200KPct: at 200K, the gateway's cost over straight's on
	// every run.
	MaxCostAt200KPct = 0.5
	// MinSavingsAt100KPct: at 100K, the gateway at least this much cheaper
	// than straight over the set.
	MinSavingsAt100KPct = 15.0
	// MinPrefixStablePct: consecutive gateway requests with the cacheable
	// prefix unchanged, at every window.
	MinPrefixStablePct = 95.0
)

// Report is what a bench measured.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	// GeneratedAt is the only field that differs between runs of the same
	// options; empty in tests.
	GeneratedAt string             `json:"generated_at,omitempty"`
	Command     string             `json:"command"`
	Tokenizer   string             `json:"tokenizer"`
	Model       string             `json:"model"`
	Prices      config.ModelPrices `json:"prices_usd_per_mtok"`
	Windows     []int              `json:"windows"`
	Runs        []RunInfo          `json:"runs"`
	// Sets sum the runs (not the session) per window and policy.
	Sets       []Set   `json:"sets"`
	Acceptance []Check `json:"acceptance"`
	Cases      []Case  `json:"cases"`
}

// RunInfo describes one replayed run.
type RunInfo struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	Model string `json:"model"`
	Task  string `json:"task"`
	Steps int    `json:"steps"`
	Facts int    `json:"facts"`
}

// Case is one run at one window under every policy.
type Case struct {
	Trajectory string         `json:"trajectory"`
	Session    bool           `json:"session,omitempty"`
	Window     int            `json:"window"`
	Steps      int            `json:"steps"`
	Facts      int            `json:"facts"`
	Policies   []PolicyResult `json:"policies"`
}

// PolicyResult is one policy on one case.
type PolicyResult struct {
	Name string `json:"policy"`
	// Requests are the model requests the policy made: one per step, plus
	// hidden rounds (gateway) or summary requests (compaction).
	Requests         int `json:"requests"`
	HiddenRounds     int `json:"hidden_rounds,omitempty"`
	CompressCalls    int `json:"compress_calls,omitempty"`
	ReadArchiveCalls int `json:"read_archive_calls,omitempty"`
	// ArchiveSearches are the read_archive calls that searched every
	// archive ({"query": ...}) rather than read one.
	ArchiveSearches int `json:"archive_searches,omitempty"`
	Compactions     int `json:"compactions,omitempty"`
	// InputTokens sums every request's input; CacheRead, CacheWrite and
	// Uncached split it as the cache model billed it; Output is the
	// model's output (the run's own turns, and any summaries).
	InputTokens int64   `json:"input_tokens"`
	CacheRead   int64   `json:"cache_read_tokens"`
	CacheWrite  int64   `json:"cache_write_tokens"`
	Uncached    int64   `json:"uncached_tokens"`
	Output      int64   `json:"output_tokens"`
	CostUSD     float64 `json:"cost_usd"`
	// CostVsStraight is CostUSD over straight's.
	CostVsStraight float64 `json:"cost_vs_straight"`
	// CacheReadPct is the share of input tokens read from the cache.
	CacheReadPct float64 `json:"cache_read_pct"`
	// Peak is the largest request; OverWindow counts requests over the
	// window (a provider refuses them).
	Peak       int `json:"peak"`
	OverWindow int `json:"over_window"`
	// PrefixStable of PrefixPairs consecutive requests kept the earlier
	// one's prompt up to its last breakpoint.
	PrefixStable    int     `json:"prefix_stable"`
	PrefixPairs     int     `json:"prefix_pairs"`
	PrefixStablePct float64 `json:"prefix_stable_pct"`
	// Facts: the request before the step that needs each fact shows it
	// (in view), or the model read it back with read_archive (recovered),
	// or neither (lost).
	FactsInView    int `json:"facts_in_view"`
	FactsRecovered int `json:"facts_recovered"`
	FactsLost      int `json:"facts_lost"`
	// OffScript counts answers that were not the run's next turn: the
	// scripted model lost its place (gateway only; want 0).
	OffScript int `json:"off_script,omitempty"`
	// TurnCostUSD is the cost of each client turn, its hidden rounds and
	// summary requests included.
	TurnCostUSD []float64 `json:"turn_cost_usd"`

	bill  bill
	turns []bill
}

// Set is one policy over every run at one window.
type Set struct {
	Window         int     `json:"window"`
	Policy         string  `json:"policy"`
	InputTokens    int64   `json:"input_tokens"`
	CostUSD        float64 `json:"cost_usd"`
	CostVsStraight float64 `json:"cost_vs_straight"`
	// RunsOverWindow counts runs with a request over the window;
	// RequestsOverWindow the requests.
	RunsOverWindow     int     `json:"runs_over_window"`
	RequestsOverWindow int     `json:"requests_over_window"`
	Peak               int     `json:"peak"`
	PrefixStablePct    float64 `json:"prefix_stable_pct"`
	CacheReadPct       float64 `json:"cache_read_pct"`
	HiddenRounds       int     `json:"hidden_rounds"`
	FactsInView        int     `json:"facts_in_view"`
	FactsRecovered     int     `json:"facts_recovered"`
	FactsLost          int     `json:"facts_lost"`
}

// Check is one acceptance criterion.
type Check struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Pass bool   `json:"pass"`
}

func newReport(opts Options) *Report {
	return &Report{SchemaVersion: SchemaVersion, Command: Command(opts), Tokenizer: opts.Tokenizer, Model: opts.Model,
		Prices: *opts.Prices, Windows: opts.Windows}
}

// Command is the command line that reproduces opts.
func Command(opts Options) string {
	args := []string{"mcproxy bench gateway"}
	if len(opts.Runs) > 0 {
		args = append(args, "--runs "+strings.Join(opts.Runs, ","))
	}
	if !equalInts(opts.Windows, DefaultWindows) {
		var ws []string
		for _, w := range opts.Windows {
			ws = append(ws, fmt.Sprint(w))
		}
		args = append(args, "--windows "+strings.Join(ws, ","))
	}
	if opts.NoSession {
		args = append(args, "--no-session")
	} else if opts.SessionWindow != SessionWindow {
		args = append(args, fmt.Sprintf("--session-window %d", opts.SessionWindow))
	}
	if opts.Model != "claude-sonnet-4-5" {
		args = append(args, "--model "+opts.Model)
	}
	if opts.Tokenizer != config.DefaultTokenizer {
		args = append(args, "--tokenizer "+opts.Tokenizer)
	}
	return strings.Join(args, " ")
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// finish prices a case's policies.
func (c *Case) finish(p config.ModelPrices) {
	straight := c.Policies[0].bill.usd(p)
	for i := range c.Policies {
		r := &c.Policies[i]
		r.CacheRead, r.CacheWrite, r.Uncached, r.Output = int64(r.bill.Read), int64(r.bill.Write), int64(r.bill.Input), int64(r.bill.Output)
		cost := r.bill.usd(p)
		r.CostUSD = round(cost, 6)
		r.CostVsStraight = ratio(cost, straight)
		r.CacheReadPct = pct(float64(r.CacheRead), float64(r.InputTokens))
		r.PrefixStablePct = pct(float64(r.PrefixStable), float64(r.PrefixPairs))
		r.TurnCostUSD = make([]float64, len(r.turns))
		for k, t := range r.turns {
			r.TurnCostUSD[k] = round(t.usd(p), 6)
		}
	}
}

func round(x float64, digits int) float64 {
	s := math.Pow(10, float64(digits))
	return math.Round(x*s) / s
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(a/b, 4)
}

func pct(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(100*a/b, 1)
}

// finish sums the sets up and judges the acceptance criteria.
func (r *Report) finish() {
	type key struct {
		w int
		p string
	}
	sums := map[key]*Set{}
	stable := map[key][2]int{}
	cached := map[key][2]int64{}
	costs := map[key]float64{}
	for _, c := range r.Cases {
		if c.Session {
			continue
		}
		for _, p := range c.Policies {
			k := key{c.Window, p.Name}
			s := sums[k]
			if s == nil {
				s = &Set{Window: c.Window, Policy: p.Name}
				sums[k] = s
			}
			s.InputTokens += p.InputTokens
			costs[k] += p.CostUSD
			if p.OverWindow > 0 {
				s.RunsOverWindow++
			}
			s.RequestsOverWindow += p.OverWindow
			s.Peak = max(s.Peak, p.Peak)
			s.HiddenRounds += p.HiddenRounds
			s.FactsInView += p.FactsInView
			s.FactsRecovered += p.FactsRecovered
			s.FactsLost += p.FactsLost
			st := stable[k]
			stable[k] = [2]int{st[0] + p.PrefixStable, st[1] + p.PrefixPairs}
			ca := cached[k]
			cached[k] = [2]int64{ca[0] + p.CacheRead, ca[1] + p.InputTokens}
		}
	}
	for _, w := range r.Windows {
		for _, name := range Policies {
			k := key{w, name}
			s := sums[k]
			if s == nil {
				continue
			}
			s.CostUSD = round(costs[k], 6)
			s.CostVsStraight = ratio(costs[k], costs[key{w, Straight}])
			s.PrefixStablePct = pct(float64(stable[k][0]), float64(stable[k][1]))
			s.CacheReadPct = pct(float64(cached[k][0]), float64(cached[k][1]))
			r.Sets = append(r.Sets, *s)
		}
	}
	r.Acceptance = r.checks()
}

func (r *Report) set(w int, policy string) (Set, bool) {
	for _, s := range r.Sets {
		if s.Window == w && s.Policy == policy {
			return s, true
		}
	}
	return Set{}, false
}

// checks are issue 27's acceptance criteria, for the windows the report
// has.
func (r *Report) checks() []Check {
	var out []Check
	add := func(name, want, got string, pass bool) {
		out = append(out, Check{Name: name, Want: want, Got: got, Pass: pass})
	}
	worst, worstRun, offScript := -math.MaxFloat64, "", 0
	for _, c := range r.Cases {
		g := c.Policies[1]
		offScript += g.OffScript
		if c.Window == 200000 && !c.Session {
			if over := 100 * (g.CostVsStraight - 1); over > worst {
				worst, worstRun = over, c.Trajectory
			}
		}
	}
	if worstRun != "" {
		add("at 200K, the gateway's cost over straight's on every run", fmt.Sprintf("<= %.1f%%", MaxCostAt200KPct),
			fmt.Sprintf("%+.2f%% at worst (%s)", worst, worstRun), worst <= MaxCostAt200KPct)
	}
	if g, ok := r.set(100000, Gateway); ok {
		saved := 100 * (1 - g.CostVsStraight)
		add("at 100K, the gateway cheaper than straight over the set", fmt.Sprintf(">= %.0f%%", MinSavingsAt100KPct),
			fmt.Sprintf("%.1f%%", saved), saved >= MinSavingsAt100KPct)
	}
	if g, ok := r.set(40000, Gateway); ok {
		add("at 40K, gateway requests over the window", "0", fmt.Sprint(g.RequestsOverWindow), g.RequestsOverWindow == 0)
		add("at 40K, the gateway's cost vs straight's", "<= 1", fmt.Sprintf("%.3f", g.CostVsStraight), g.CostVsStraight <= 1)
		cheapest, name := math.MaxFloat64, ""
		for _, p := range []string{ClearAt100, ClearAtLow, Compact95} {
			if s, ok := r.set(40000, p); ok && s.RequestsOverWindow == 0 && s.CostUSD < cheapest {
				cheapest, name = s.CostUSD, p
			}
		}
		if name != "" {
			add("at 40K, the gateway below every alternative that fits the window", fmt.Sprintf("< %.4f USD (%s)", cheapest, name),
				fmt.Sprintf("%.4f USD", g.CostUSD), g.CostUSD < cheapest)
		}
	}
	for _, w := range r.Windows {
		if g, ok := r.set(w, Gateway); ok {
			add(fmt.Sprintf("at %s, consecutive gateway requests with the prefix unchanged", short(w)), fmt.Sprintf(">= %.0f%%", MinPrefixStablePct),
				fmt.Sprintf("%.1f%%", g.PrefixStablePct), g.PrefixStablePct >= MinPrefixStablePct)
			add(fmt.Sprintf("at %s, later-needed facts in view or recoverable", short(w)), "all",
				fmt.Sprintf("%d lost of %d", g.FactsLost, g.FactsLost+g.FactsInView+g.FactsRecovered), g.FactsLost == 0)
		}
	}
	for _, c := range r.Cases {
		if c.Session {
			g := c.Policies[1]
			add(fmt.Sprintf("the long session at %s: requests over the window, facts lost", short(c.Window)), "0, 0",
				fmt.Sprintf("%d, %d", g.OverWindow, g.FactsLost), g.OverWindow == 0 && g.FactsLost == 0)
		}
	}
	add("the scripted model answered every request with the run's next turn", "0 off script", fmt.Sprint(offScript), offScript == 0)
	return out
}

// Pass reports whether every acceptance criterion holds.
func (r *Report) Pass() bool {
	for _, c := range r.Acceptance {
		if !c.Pass {
			return false
		}
	}
	return len(r.Acceptance) > 0
}

// JSON is the report as indented JSON (report.json).
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the report: %w", err)
	}
	return append(b, '\n'), nil
}

// Markdown renders the report for people (report.md).
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# mcproxy bench gateway\n\n")
	if r.GeneratedAt != "" {
		fmt.Fprintf(&b, "Generated %s · ", r.GeneratedAt)
	}
	fmt.Fprintf(&b, "`%s` · tokenizer `%s` · report schema v%d\n\n", r.Command, r.Tokenizer, r.SchemaVersion)
	p := r.Prices
	fmt.Fprintf(&b, "%d agent runs replayed as their client sent them, each at every window, under each policy; model `%s` at "+
		"%g / %g / %g / %g USD per million input / output / cache-read / cache-write tokens. "+
		"Cost is with prompt caching (docs/benchmarks.md says how it is modelled).\n\n",
		len(r.Runs), r.Model, p.Input, p.Output, p.CacheRead, p.CacheWrite)

	b.WriteString("| acceptance | want | got | |\n|---|---|---|---|\n")
	for _, c := range r.Acceptance {
		mark := "pass"
		if !c.Pass {
			mark = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Want, c.Got, mark)
	}

	b.WriteString("\n## Over the set\n\n")
	b.WriteString("| window | policy | input tokens | cost USD | vs straight | peak | runs (requests) over the window | prefix unchanged | read from cache | hidden rounds | facts in view / read back / lost |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.Sets {
		fmt.Fprintf(&b, "| %s | %s | %d | %.4f | %.3f | %d | %d (%d) | %.1f%% | %.1f%% | %d | %d / %d / %d |\n",
			short(s.Window), s.Policy, s.InputTokens, s.CostUSD, s.CostVsStraight, s.Peak, s.RunsOverWindow, s.RequestsOverWindow,
			s.PrefixStablePct, s.CacheReadPct, s.HiddenRounds, s.FactsInView, s.FactsRecovered, s.FactsLost)
	}

	b.WriteString("\n## Runs\n\n| id | agent | model | task | steps | facts |\n|---|---|---|---|---:|---:|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d |\n", run.ID, run.Agent, run.Model, run.Task, run.Steps, run.Facts)
	}

	b.WriteString("\n## Per run and window\n\n")
	b.WriteString("| run | window | policy | requests | input tokens | cost USD | vs straight | peak | over the window | prefix unchanged | hidden rounds | facts in view / read back / lost |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	cases := append([]Case(nil), r.Cases...)
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].Session != cases[j].Session && !cases[i].Session })
	for _, c := range cases {
		for _, p := range c.Policies {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.4f | %.3f | %d | %d | %.1f%% | %d | %d / %d / %d |\n",
				c.Trajectory, short(c.Window), p.Name, p.Requests, p.InputTokens, p.CostUSD, p.CostVsStraight, p.Peak, p.OverWindow,
				p.PrefixStablePct, p.HiddenRounds, p.FactsInView, p.FactsRecovered, p.FactsLost)
		}
	}
	return b.String()
}
