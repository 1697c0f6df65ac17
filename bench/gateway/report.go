package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
)

// SchemaVersion is the version of the report's JSON shape.
const SchemaVersion = 1

// Acceptance thresholds (issue 14).
const (
	// MinSavingsPct: forwarded input tokens over the whole replay at least
	// this far below the unmanaged conversation's.
	MinSavingsPct = 60.0
	// MinPrefixStablePct: the share of consecutive upstream requests whose
	// cacheable prefix is unchanged.
	MinPrefixStablePct = 90.0
)

// Report is what a replay measured.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	// GeneratedAt is the only field that differs between runs of the same
	// options; empty in tests.
	GeneratedAt string       `json:"generated_at,omitempty"`
	Command     string       `json:"command"`
	Tokenizer   string       `json:"tokenizer"`
	Model       string       `json:"model"`
	Window      int          `json:"window"`
	CacheMarks  bool         `json:"client_cache_breakpoints"`
	Scenario    ScenarioInfo `json:"scenario"`
	Totals      Totals       `json:"totals"`
	Acceptance  []Check      `json:"acceptance"`
	Questions   []Question   `json:"questions"`
	// Turns has one entry per client request, in order.
	Turns []Turn `json:"turns"`
}

// ScenarioInfo describes the replayed conversation.
type ScenarioInfo struct {
	Steps        int    `json:"steps"`
	Tasks        int    `json:"reading_steps"`
	FilesPerTask int    `json:"files_per_step"`
	FileBytes    string `json:"file_bytes"`
	Facts        int    `json:"facts"`
	Questions    int    `json:"questions"`
	Seed         uint64 `json:"seed"`
}

// Totals sum the replay up.
type Totals struct {
	// Requests are the client's; Upstream the gateway's to the model
	// (Requests plus HiddenRounds).
	Requests     int `json:"client_requests"`
	Upstream     int `json:"upstream_requests"`
	HiddenRounds int `json:"hidden_rounds"`
	// CompressCalls and ReadArchiveCalls are the model's own calls the
	// gateway answered inside.
	CompressCalls    int `json:"compress_calls"`
	ReadArchiveCalls int `json:"read_archive_calls"`
	// UnmanagedTokens is the input tokens of every client request as the
	// client sent it (the conversation without the gateway);
	// ForwardedTokens that of every upstream request.
	UnmanagedTokens int64   `json:"unmanaged_tokens"`
	ForwardedTokens int64   `json:"forwarded_tokens"`
	SavingsPct      float64 `json:"savings_pct"`
	// Peaks are the largest single requests.
	PeakUnmanaged int `json:"peak_unmanaged"`
	PeakForwarded int `json:"peak_forwarded"`
	// OverWindow counts upstream requests larger than the window;
	// UnmanagedOverWindow the client's, the first of them being request
	// FirstOverWindow (0: none). Past it a client without the gateway would
	// have had to cut its history itself, or fail.
	OverWindow          int `json:"over_window"`
	UnmanagedOverWindow int `json:"unmanaged_over_window"`
	FirstOverWindow     int `json:"first_unmanaged_over_window"`
	// PrefixStable of PrefixPairs consecutive upstream requests kept the
	// previous one's cacheable prefix (gatewaytest.Prefix).
	PrefixStable    int     `json:"prefix_stable"`
	PrefixPairs     int     `json:"prefix_pairs"`
	PrefixStablePct float64 `json:"prefix_stable_pct"`
	// Answered of Questions later questions got the planted value.
	Answered  int `json:"answered"`
	Questions int `json:"questions"`
}

// Check is one acceptance criterion.
type Check struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Pass bool   `json:"pass"`
}

// Question is one later question and how it went.
type Question struct {
	Step     int    `json:"step"`
	Fact     string `json:"fact"`
	Answered bool   `json:"answered"`
	// Via is where the model found the value: "view" (the request showed
	// it) or "read_archive" (a summary named where it was, and the model
	// read it back).
	Via    string `json:"via"`
	Answer string `json:"answer"`
}

// Turn is one client request.
type Turn struct {
	N    int `json:"n"`
	Step int `json:"step"`
	// Unmanaged is the request as the client sent it; Forwarded the sum
	// over the upstream requests it took (Upstream of them, the largest
	// Peak).
	Unmanaged int `json:"unmanaged"`
	Forwarded int `json:"forwarded"`
	Upstream  int `json:"upstream"`
	Peak      int `json:"peak"`
	// Compress and ReadArchive are the model's calls the gateway answered
	// in the turn's hidden rounds.
	Compress    int `json:"compress,omitempty"`
	ReadArchive int `json:"read_archive,omitempty"`
}

func newReport(opts Options, sc *gatewaytest.Scenario) *Report {
	s := opts.Scenario
	questions := 0
	for _, st := range sc.Steps {
		if st.Question() {
			questions++
		}
	}
	return &Report{SchemaVersion: SchemaVersion, Command: Command(opts), Tokenizer: opts.Tokenizer, Model: opts.Model, Window: opts.Window,
		CacheMarks: !opts.NoCacheControl,
		Scenario: ScenarioInfo{Steps: len(sc.Steps), Tasks: s.Tasks, FilesPerTask: s.FilesPerTask,
			FileBytes: fmt.Sprintf("%d-%d", s.MinFileBytes, s.MaxFileBytes), Facts: s.Facts, Questions: questions, Seed: s.Seed}}
}

// Command is the command line that reproduces opts.
func Command(opts Options) string {
	args := []string{"mcproxy bench gateway"}
	s := opts.Scenario
	if s != DefaultScenario {
		args = append(args, fmt.Sprintf("--tasks %d --files-per-task %d --min-file-bytes %d --max-file-bytes %d --facts %d --questions %d --seed %d",
			s.Tasks, s.FilesPerTask, s.MinFileBytes, s.MaxFileBytes, s.Facts, s.Questions, s.Seed))
	}
	if opts.Model != "claude-sonnet-4-5" {
		args = append(args, "--model "+opts.Model)
	}
	args = append(args, fmt.Sprintf("--window %d", opts.Window))
	if opts.NoCacheControl {
		args = append(args, "--no-cache-control")
	}
	return strings.Join(args, " ")
}

// finish sums the turns up and judges the acceptance criteria.
func (r *Report) finish() {
	t := &r.Totals
	t.Requests = len(r.Turns)
	for _, turn := range r.Turns {
		t.Upstream += turn.Upstream
		t.CompressCalls += turn.Compress
		t.ReadArchiveCalls += turn.ReadArchive
		t.UnmanagedTokens += int64(turn.Unmanaged)
		t.ForwardedTokens += int64(turn.Forwarded)
		t.PeakUnmanaged = max(t.PeakUnmanaged, turn.Unmanaged)
		t.PeakForwarded = max(t.PeakForwarded, turn.Peak)
		if turn.Peak > r.Window {
			t.OverWindow++ // at least one of the turn's requests
		}
		if turn.Unmanaged > r.Window {
			t.UnmanagedOverWindow++
			if t.FirstOverWindow == 0 {
				t.FirstOverWindow = turn.N
			}
		}
	}
	t.HiddenRounds = t.Upstream - t.Requests
	if t.UnmanagedTokens > 0 {
		t.SavingsPct = round1(100 * (1 - float64(t.ForwardedTokens)/float64(t.UnmanagedTokens)))
	}
	if t.PrefixPairs > 0 {
		t.PrefixStablePct = round1(100 * float64(t.PrefixStable) / float64(t.PrefixPairs))
	}
	t.Questions = len(r.Questions)
	for _, q := range r.Questions {
		if q.Answered {
			t.Answered++
		}
	}
	r.Acceptance = []Check{
		{Name: "forwarded input tokens below the unmanaged conversation's", Want: fmt.Sprintf(">= %.0f%%", MinSavingsPct),
			Got: fmt.Sprintf("%.1f%%", t.SavingsPct), Pass: t.SavingsPct >= MinSavingsPct},
		{Name: "upstream requests over the window", Want: "0", Got: fmt.Sprint(t.OverWindow), Pass: t.OverWindow == 0},
		{Name: "later questions answered", Want: fmt.Sprintf("%d of %d", t.Questions, t.Questions),
			Got: fmt.Sprintf("%d of %d", t.Answered, t.Questions), Pass: t.Answered == t.Questions},
		{Name: "consecutive requests with the cacheable prefix unchanged", Want: fmt.Sprintf(">= %.0f%%", MinPrefixStablePct),
			Got: fmt.Sprintf("%.1f%% (%d of %d)", t.PrefixStablePct, t.PrefixStable, t.PrefixPairs), Pass: t.PrefixStablePct >= MinPrefixStablePct},
	}
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

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

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
	t := r.Totals
	b.WriteString("# mcproxy bench gateway\n\n")
	if r.GeneratedAt != "" {
		fmt.Fprintf(&b, "Generated %s · ", r.GeneratedAt)
	}
	fmt.Fprintf(&b, "`%s` · tokenizer `%s` · report schema v%d\n\n", r.Command, r.Tokenizer, r.SchemaVersion)
	s := r.Scenario
	fmt.Fprintf(&b, "A scripted agent conversation replayed through the gateway's HTTP handler against a scripted model that obeys noa's nudges: "+
		"%d steps (%d reading steps of %d log files of %s bytes, one read_file call per file; %d facts planted in the first files, "+
		"%d later questions), model `%s` with a %d-token window, client cache breakpoints %s. "+
		"Tokens are counted with the same tokenizer on both sides: the system prompt, each tool and each message as JSON. "+
		"Without the gateway the conversation outgrows the window; its line goes on as what the client would send, "+
		"which no model would accept.\n\n",
		s.Steps, s.Tasks, s.FilesPerTask, s.FileBytes, s.Facts, s.Questions, r.Model, r.Window, onOff(r.CacheMarks))

	b.WriteString("| acceptance | want | got | |\n|---|---|---|---|\n")
	for _, c := range r.Acceptance {
		mark := "pass"
		if !c.Pass {
			mark = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Want, c.Got, mark)
	}

	b.WriteString("\n| | without the gateway (what the client sends) | through the gateway (what the model reads) |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| requests | %d | %d (%d hidden rounds) |\n", t.Requests, t.Upstream, t.HiddenRounds)
	fmt.Fprintf(&b, "| input tokens, whole replay | %d | %d (%.1f%% fewer) |\n", t.UnmanagedTokens, t.ForwardedTokens, t.SavingsPct)
	fmt.Fprintf(&b, "| largest request | %d | %d |\n", t.PeakUnmanaged, t.PeakForwarded)
	fmt.Fprintf(&b, "| requests over the %d-token window | %d (from request %d on) | %d |\n", r.Window, t.UnmanagedOverWindow, t.FirstOverWindow, t.OverWindow)
	fmt.Fprintf(&b, "\nInside the gateway: %d Compress calls and %d read_archive calls by the model, answered in hidden rounds. "+
		"Prompt-cache prefix unchanged on %d of %d consecutive upstream requests (%.1f%%).\n",
		t.CompressCalls, t.ReadArchiveCalls, t.PrefixStable, t.PrefixPairs, t.PrefixStablePct)

	b.WriteString("\n## Later questions\n\n| step | fact | answered | found in | answer |\n|---:|---|---|---|---|\n")
	for _, q := range r.Questions {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", q.Step, q.Fact, yesNo(q.Answered), q.Via, strings.ReplaceAll(q.Answer, "|", "\\|"))
	}

	b.WriteString("\n## Input tokens per request\n\nEvery 10th client request, and the last (report.json has them all).\n\n")
	b.WriteString("| request | step | without the gateway | through the gateway | upstream requests |\n|---:|---:|---:|---:|---:|\n")
	for i, turn := range r.Turns {
		if (i+1)%10 != 0 && i != len(r.Turns)-1 {
			continue
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d |\n", turn.N, turn.Step, turn.Unmanaged, turn.Forwarded, turn.Upstream)
	}
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on (as Claude Code sets them)"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}
