package gateway

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mcproxy/mcproxy/bench/trajectory"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// coop is the scripted model of one replayed run: a cooperative model that
// works out where it is from what the request shows and answers the run's
// next assistant turn, obeying the gateway's nudges and reading archived
// messages back when the next call needs a fact it no longer sees.
//
//   - Progress: the newest of its own turns in view, by tool-call id (the
//     client's ids name the run and the step) or by text, or the newest
//     step its own work-log summaries name. It never counts messages.
//   - A nudge (a text block of the last message that the run's client did
//     not write, with Compress offered) is answered with one Compress call for every pair
//     of refs the nudge names ("m00012–m00040", "start=b1 end=b3"),
//     whatever its wording, unless the model has just compressed. Each
//     summary is a work log: per step, the call (bounded) and the first
//     line of its output (bounded), with the refs of its results.
//   - When the next turn's call needs a fact (trajectory.Facts) the request
//     does not show, it calls read_archive for the refs its summaries
//     name, most promising first (the most words shared with the call it
//     is about to make), one per hidden round, until the fact is in view.
type coop struct {
	t     *trajectory.Trajectory
	count *counter
	byID  map[string]int   // tool-call id → step
	texts map[string][]int // assistant text → steps, ascending
	heads map[string][]int // the first headLen bytes of a long assistant text → steps
	users map[string]bool  // the run's own user texts: the task, feedback
	facts map[int][]trajectory.Fact

	mu    sync.Mutex
	out   map[int]int // upstream Seq → output tokens of the reply
	found map[string]string
	off   []string // answers that were not the run's next turn
	// compress and reads count the hidden calls the model made.
	compress, reads int
	searches        int // reads that were searches
}

func newCoop(t *trajectory.Trajectory, count *counter, facts []trajectory.Fact) *coop {
	m := &coop{t: t, count: count, byID: map[string]int{}, texts: map[string][]int{}, heads: map[string][]int{}, users: map[string]bool{t.TaskMessage: true}, facts: map[int][]trajectory.Fact{},
		out: map[int]int{}, found: map[string]string{}}
	for k := range t.Steps {
		for _, b := range t.AnthropicAssistant(k).Content {
			if b.Type == "tool_use" {
				m.byID[b.ID] = k
			}
		}
		if s := t.Steps[k].Text; s != "" {
			m.texts[s] = append(m.texts[s], k)
			if len(s) > 2*headLen {
				m.heads[s[:headLen]] = append(m.heads[s[:headLen]], k)
			}
		}
		for _, u := range t.Steps[k].User {
			m.users[u] = true
		}
	}
	for _, f := range facts {
		m.facts[f.Needed] = append(m.facts[f.Needed], f)
	}
	return m
}

// Fact outcomes.
const (
	inView      = "view"
	viaArchive  = "read_archive"
	lost        = "lost"
	workLogHead = "Work log, steps "
)

// vblock is one content block of a request as the model reads it.
type vblock struct {
	msg     int
	role    string
	typ     string
	text    string // text, tool result text, tool_use input
	name    string // tool_use name; a tool_result's call's
	id      string // tool_use id or tool_result's tool_use_id
	ref     string // the ref tag the gateway gave it
	step    int    // the run's step the block belongs to, -1 none
	archive bool   // a read_archive result
}

type mview struct {
	blocks  []vblock
	tools   []string
	noTools bool
	nudge   string
	next    int // the run's step to answer
}

var (
	refTag    = regexp.MustCompile(`^\[(m\d+)\b[^\]]*\]$`)
	refPair   = regexp.MustCompile(`\b([mb]\d+)\s*(?:–|—|-|\.\.|\bto\b|\s+end=)\s*([mb]\d+)\b`)
	anyRef    = regexp.MustCompile(`\bm\d+\b`)
	logLine   = regexp.MustCompile(`(?m)^step (\d+)(?: \[([^\]]*)\])?:(.*)$`)
	wordToken = regexp.MustCompile(`[A-Za-z0-9_./-]{3,}`)
	blockID   = regexp.MustCompile(`\bb(\d+)\b`)
)

func (m *coop) read(body []byte) (*mview, error) {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
		} `json:"tool_choice"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	v := &mview{noTools: req.ToolChoice.Type == "none"}
	for _, t := range req.Tools {
		v.tools = append(v.tools, t.Name)
	}
	names := map[string]string{}
	// cur is the newest step of the run seen so far; said the step of the
	// newest assistant message, which a turn without calls follows.
	cur, said := -1, -1
	for i, msg := range req.Messages {
		last := i == len(req.Messages)-1
		if msg.Role == "assistant" {
			if k, ok := m.turnOf(msg.Content, said); ok {
				said, cur = k, max(cur, k)
			}
		}
		for _, raw := range contentBlocks(msg.Content) {
			var b struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(raw, &b); err != nil {
				return nil, err
			}
			blk := vblock{msg: i, role: msg.Role, typ: b.Type, step: -1}
			switch b.Type {
			case "text":
				if t := refTag.FindStringSubmatch(b.Text); t != nil && len(v.blocks) > 0 && v.blocks[len(v.blocks)-1].msg == i {
					v.blocks[len(v.blocks)-1].ref = t[1]
					continue
				}
				if last && msg.Role == "user" && (strings.HasPrefix(b.Text, "[noa]") || !m.users[b.Text]) {
					v.nudge += b.Text + "\n"
					continue
				}
				blk.text = b.Text
				if i := strings.Index(b.Text, workLogHead); i >= 0 {
					for _, l := range logLine.FindAllStringSubmatch(b.Text[i:], -1) {
						if k, err := strconv.Atoi(l[1]); err == nil && k > cur && k < len(m.t.Steps) {
							cur = k
						}
					}
				}
			case "tool_use":
				blk.text, blk.name, blk.id = string(b.Input), b.Name, b.ID
				names[b.ID] = b.Name
			case "tool_result":
				blk.id, blk.name = b.ToolUseID, names[b.ToolUseID]
				blk.archive = blk.name == "read_archive"
				for _, c := range contentBlocks(b.Content) {
					var t struct {
						Text string `json:"text"`
					}
					_ = json.Unmarshal(c, &t)
					if r := refTag.FindStringSubmatch(t.Text); r != nil {
						blk.ref = r[1]
						continue
					}
					blk.text += t.Text
				}
			}
			blk.step = cur
			v.blocks = append(v.blocks, blk)
		}
	}
	v.next = cur + 1
	return v, nil
}

// turnOf is the step an assistant message is: the step of a call of the
// run's it holds, else the first step after the one before (after) with
// its text. Texts repeat ("Step 3: looking further."), ids never do.
func (m *coop) turnOf(content json.RawMessage, after int) (int, bool) {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
	}
	_ = json.Unmarshal(content, &blocks)
	for _, b := range blocks {
		if k, ok := m.byID[b.ID]; ok && b.Type == "tool_use" {
			return k, true
		}
	}
	for _, b := range blocks {
		for _, k := range m.texts[b.Text] {
			if b.Type == "text" && k > after {
				return k, true
			}
		}
	}
	// A long text of its own that the gateway cut to fit the window (noa
	// keeps its head and tail around a note) is still the model's: it
	// knows it by its opening.
	for _, b := range blocks {
		if b.Type != "text" || len(b.Text) < headLen || m.texts[b.Text] != nil {
			continue
		}
		for _, k := range m.heads[b.Text[:headLen]] {
			if k > after && strings.HasSuffix(m.t.Steps[k].Text, lastLine(b.Text)) {
				return k, true
			}
		}
	}
	return 0, false
}

// headLen is how much of a long assistant text recognises it when cut.
const headLen = 200

// lastLine is the text after s's last newline (all of s when it has none).
func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

func (v *mview) offers(tool string) bool { return !v.noTools && slices.Contains(v.tools, tool) }

// justCalled reports whether the last message answers a call of the
// model's own named tool.
func (v *mview) justCalled(tool string) bool {
	if len(v.blocks) == 0 {
		return false
	}
	lastMsg := v.blocks[len(v.blocks)-1].msg
	for _, b := range v.blocks {
		if b.msg == lastMsg && b.typ == "tool_result" && b.name == tool {
			return true
		}
	}
	return false
}

// searchFor is the query of a read_archive search for the missing facts
// no search in view has looked for yet; false when every one was looked
// for (the search found it, or it is in no archive).
func (v *mview) searchFor(missing []trajectory.Fact) (string, bool) {
	asked := map[string]bool{}
	for _, b := range v.blocks {
		if b.typ == "tool_use" && b.name == "read_archive" {
			var in struct {
				Query string `json:"query"`
			}
			_ = json.Unmarshal([]byte(b.text), &in)
			for _, w := range strings.Fields(in.Query) {
				asked[w] = true
			}
		}
	}
	var q []string
	for _, f := range missing {
		if !asked[f.Text] && len(q) < searchTerms {
			q = append(q, f.Text)
		}
	}
	return strings.Join(q, " "), len(q) > 0
}

// searchTerms is how many words the model puts in one search (the
// gateway looks for at most eight).
const searchTerms = 8

func (v *mview) shows(s string) (bool, bool) {
	seen, archived := false, false
	for _, b := range v.blocks {
		if strings.Contains(b.text, s) {
			seen = true
			archived = archived || b.archive
		}
	}
	return seen, archived
}

// answer is the Script: a pure function of the request, but for the
// records it keeps for the report.
func (m *coop) answer(r *scriptedmodel.Request) scriptedmodel.Reply {
	if r.Path != "/v1/messages" {
		return scriptedmodel.Reply{}
	}
	reply := m.reply(r)
	n := 0
	for _, p := range reply.Parts {
		n += m.count.text(p.Text+p.Name) + m.count.text(p.Input)
	}
	m.mu.Lock()
	m.out[r.Seq] = n
	m.mu.Unlock()
	return reply
}

func (m *coop) reply(r *scriptedmodel.Request) scriptedmodel.Reply {
	v, err := m.read(r.Body)
	if err != nil {
		return scriptedmodel.Say("I could not read the request: " + err.Error())
	}
	if v.next >= len(m.t.Steps) {
		m.offScript(fmt.Sprintf("upstream request %d: nothing in view places it before a step of the run", r.Seq))
		return scriptedmodel.Say("The task is done.")
	}
	if strings.Contains(v.nudge, "[mcproxy]") && strings.Contains(v.nudge, "<summary>") {
		// The gateway's first compression round: a summary of the earlier
		// part, up to the message the instruction names, as text.
		m.mu.Lock()
		m.compress++
		m.mu.Unlock()
		return scriptedmodel.Say("<summary>" + m.firstSummary(v) + "</summary>")
	}
	if v.nudge != "" && v.offers("Compress") && !v.justCalled("Compress") {
		if args, ok := m.compressArgs(v); ok {
			m.mu.Lock()
			m.compress++
			m.mu.Unlock()
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("", "Compress", args)}}
		}
	}
	next := m.t.AnthropicAssistant(v.next)
	var missing []trajectory.Fact
	for _, f := range m.facts[v.next] {
		if seen, _ := v.shows(f.Text); !seen {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 && v.offers("read_archive") {
		if q, ok := v.searchFor(missing); ok {
			// What the next call needs is out of view: look for it in
			// every archive first, as an agent greps before it reads.
			in, _ := json.Marshal(map[string]string{"query": q})
			m.mu.Lock()
			m.reads++
			m.searches++
			m.mu.Unlock()
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("", "read_archive", string(in))}}
		}
		if refs := m.picks(v, next); len(refs) > 0 {
			var calls []scriptedmodel.Part
			for _, ref := range refs {
				in, _ := json.Marshal(map[string]string{"ref": ref})
				calls = append(calls, scriptedmodel.ToolCall("", "read_archive", string(in)))
			}
			m.mu.Lock()
			m.reads += len(calls)
			m.mu.Unlock()
			return scriptedmodel.Reply{Parts: calls}
		}
		if args, ok := v.blockPage(); ok {
			// No work log names a ref (the first round's summary could
			// not): page through the block's archive.
			m.mu.Lock()
			m.reads++
			m.mu.Unlock()
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("", "read_archive", args)}}
		}
	}
	m.mu.Lock()
	for _, f := range m.facts[v.next] {
		if _, done := m.found[f.Text]; done {
			continue
		}
		switch seen, archived := v.shows(f.Text); {
		case archived:
			m.found[f.Text] = viaArchive
		case seen:
			m.found[f.Text] = inView
		default:
			m.found[f.Text] = lost
		}
	}
	m.mu.Unlock()
	var parts []scriptedmodel.Part
	for _, b := range next.Content {
		if b.Type == "text" {
			parts = append(parts, scriptedmodel.Text(b.Text))
		} else {
			parts = append(parts, scriptedmodel.ToolCall(b.ID, b.Name, string(b.Input)))
		}
	}
	return scriptedmodel.Reply{Parts: parts}
}

func (m *coop) offScript(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.off = append(m.off, s)
}

// readsPerRound is how many read_archive calls the model makes in one
// answer, as a model calls tools in parallel.
const readsPerRound = 3

// picks are the archived refs most worth reading for the call ahead: among
// the refs the work logs in view name and no read_archive in view has
// read, those whose log line shares the most words with the call, the
// newest first on a tie.
func (m *coop) picks(v *mview, next trajectory.AnthropicMessage) []string {
	want := map[string]bool{}
	for _, b := range next.Content {
		for _, w := range wordToken.FindAllString(string(b.Input)+" "+b.Text, -1) {
			want[w] = true
		}
	}
	read := map[string]bool{}
	for _, b := range v.blocks {
		if b.typ == "tool_use" && b.name == "read_archive" {
			var in struct {
				Ref string `json:"ref"`
			}
			_ = json.Unmarshal([]byte(b.text), &in)
			read[in.Ref] = true
		}
	}
	type cand struct {
		ref          string
		score, order int
	}
	var cands []cand
	for _, b := range v.blocks {
		i := strings.Index(b.text, workLogHead)
		if i < 0 {
			continue
		}
		for _, l := range logLine.FindAllStringSubmatch(b.text[i:], -1) {
			score := 0
			for _, w := range wordToken.FindAllString(l[3], -1) {
				if want[w] {
					score++
				}
			}
			for _, ref := range anyRef.FindAllString(l[2], -1) {
				if !read[ref] {
					read[ref] = true // once, however many logs name it
					cands = append(cands, cand{ref, score, len(cands)})
				}
			}
		}
	}
	// The gateway's index of a first-round summary: "m00012: bash ls".
	for _, b := range v.blocks {
		if !strings.HasPrefix(b.text, noaSummaryHeader) {
			continue
		}
		for _, l := range indexLine.FindAllStringSubmatch(b.text, -1) {
			score := 0
			for _, w := range wordToken.FindAllString(l[2], -1) {
				if want[w] {
					score++
				}
			}
			if !read[l[1]] {
				read[l[1]] = true
				cands = append(cands, cand{l[1], score, len(cands)})
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].order > cands[j].order
	})
	var out []string
	for _, c := range cands[:min(readsPerRound, len(cands))] {
		out = append(out, c.ref)
	}
	return out
}

// noaSummaryHeader starts the text of a summary in view.
const noaSummaryHeader = "[Compressed conversation section]"

var (
	indexLine    = regexp.MustCompile(`(?m)^(m\d+): (.*)$`)
	summaryBlock = regexp.MustCompile(`^\[Compressed conversation section\] (b\d+)\(T`)
	morePage     = regexp.MustCompile(`more follows: read_archive \{"block":"(b\d+)","offset":(\d+)\}`)
)

// blockPage is the read_archive call for the next unread page of the
// oldest summarised block in view whose archive has not been read to its
// end; false when every one has.
func (v *mview) blockPage() (string, bool) {
	asked := map[string]string{} // read_archive call id -> block
	next := map[string]int{}     // block -> next offset; -1 read to the end
	for _, b := range v.blocks {
		switch {
		case b.typ == "tool_use" && b.name == "read_archive":
			var in struct {
				Block string `json:"block"`
			}
			_ = json.Unmarshal([]byte(b.text), &in)
			asked[b.id] = in.Block
		case b.archive && asked[b.id] != "":
			if mp := morePage.FindStringSubmatch(b.text); mp != nil {
				n, _ := strconv.Atoi(mp[2])
				next[mp[1]] = max(next[mp[1]], n)
			} else {
				next[asked[b.id]] = -1
			}
		}
	}
	for _, b := range v.blocks {
		if id := summaryBlock.FindStringSubmatch(b.text); id != nil && next[id[1]] >= 0 {
			in, _ := json.Marshal(map[string]any{"block": id[1], "offset": next[id[1]]})
			return string(in), true
		}
	}
	return "", false
}

// lastQuoted is the last Go-quoted string of the instruction: the excerpt
// of the message its span ends with ("up to and including ... %q").
var lastQuoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// firstSummary is the work log of the steps in view up to the message the
// first round's instruction names as its end (every step before the
// newest when it names none the model can find).
func (m *coop) firstSummary(v *mview) string {
	end := len(v.blocks)
	for i := len(v.blocks) - 1; i >= 0; i-- {
		if v.blocks[i].step == v.next-1 {
			end = i // the step in progress stays out
		}
	}
	if q := lastQuoted.FindAllStringSubmatch(v.nudge, -1); len(q) > 0 {
		if want, err := strconv.Unquote(`"` + q[len(q)-1][1] + `"`); err == nil && want != "" {
			for i := len(v.blocks) - 1; i >= 0; i-- {
				if strings.HasPrefix(strings.TrimSpace(v.blocks[i].text), want) {
					end = i + 1
					break
				}
			}
		}
	}
	lines := m.workLog(v.blocks[:end])
	if len(lines) == 0 {
		return "No steps before this one."
	}
	return workLogText(lines)
}

// compressArgs writes the Compress call for the ranges the nudge names; false
// when none of them is in view.
func (m *coop) compressArgs(v *mview) (string, bool) {
	type item struct {
		Start   string `json:"start"`
		End     string `json:"end"`
		Summary string `json:"summary"`
		Topic   string `json:"topic"`
	}
	var items []item
	seen := map[string]bool{}
	cut := v.newestRef()
	for _, p := range refPair.FindAllStringSubmatch(v.nudge, -1) {
		start, end := p[1], p[2]
		if seen[start+" "+end] || start[0] != end[0] {
			continue
		}
		seen[start+" "+end] = true
		var lines []string
		if start[0] == 'm' {
			// The step in progress stays in view: the range ends before it.
			if cut != "" && refNum(end) >= refNum(cut) {
				if end = v.lastRefBefore(cut, start); end == "" {
					continue
				}
			}
			lo, hi, ok := v.span(start, end)
			if !ok {
				continue
			}
			lines = m.workLog(v.blocks[lo:hi])
		} else {
			for _, l := range v.mergedLog(start, end) {
				lines = append(lines, condense(l))
			}
		}
		if len(lines) == 0 {
			continue
		}
		items = append(items, item{Start: start, End: end, Topic: "earlier steps", Summary: workLogText(lines)})
	}
	if len(items) == 0 {
		return "", false
	}
	b, _ := json.Marshal(map[string]any{"content": items})
	return string(b), true
}

// newestRef is the first ref tag of the newest step in view ("" when it
// has none).
func (v *mview) newestRef() string {
	newest := v.next - 1
	for _, b := range v.blocks {
		if b.step >= newest && b.ref != "" {
			return b.ref
		}
	}
	return ""
}

// lastRefBefore is the newest ref tag in view below limit and not below
// start ("" when none).
func (v *mview) lastRefBefore(limit, start string) string {
	best := ""
	for _, b := range v.blocks {
		if b.ref != "" && refNum(b.ref) < refNum(limit) && refNum(b.ref) >= refNum(start) && (best == "" || refNum(b.ref) > refNum(best)) {
			best = b.ref
		}
	}
	return best
}

// span is the blocks the refs start..end cover: from just after the last
// tagged block before start to just before the first tagged block after
// end, so the untagged calls beside tagged results are in it. False when
// neither ref is tagged in view.
func (v *mview) span(start, end string) (int, int, bool) {
	a, b := refNum(start), refNum(end)
	lo, hi, in := 0, len(v.blocks), false
	for i, blk := range v.blocks {
		if blk.ref == "" {
			continue
		}
		n := refNum(blk.ref)
		switch {
		case n < a:
			lo = i + 1
		case n > b && hi == len(v.blocks):
			hi = i
		case n >= a && n <= b:
			in = true
		}
	}
	return lo, hi, in && lo < hi
}

func refNum(ref string) int {
	n, _ := strconv.Atoi(strings.TrimLeft(ref, "mb"))
	return n
}

// workLog is one line per step the blocks hold, and the lines of the work
// logs among them.
func (m *coop) workLog(blocks []vblock) []string {
	var lines []string
	done := map[int]bool{}
	refs := map[int][]string{}
	for _, b := range blocks {
		if b.typ == "tool_result" && b.ref != "" && b.step >= 0 {
			refs[b.step] = append(refs[b.step], b.ref)
		}
	}
	for _, b := range blocks {
		if i := strings.Index(b.text, workLogHead); b.typ == "text" && i >= 0 {
			lines = append(lines, logLine.FindAllString(b.text[i:], -1)...)
			continue
		}
		if b.step < 0 || done[b.step] || b.role != "assistant" {
			continue
		}
		done[b.step] = true
		lines = append(lines, stepLine(m.t, b.step, refs[b.step]))
	}
	return lines
}

// mergedLog is the work-log lines of the summaries in view that name a
// block id from start to end (a tier-2 or tier-3 merge).
func (v *mview) mergedLog(start, end string) []string {
	a, b := refNum(start), refNum(end)
	var lines []string
	for _, blk := range v.blocks {
		i := strings.Index(blk.text, workLogHead)
		if i < 0 {
			continue
		}
		id := blockID.FindStringSubmatch(blk.text[:i])
		if id == nil {
			continue
		}
		if n, _ := strconv.Atoi(id[1]); n < a || n > b {
			continue
		}
		lines = append(lines, logLine.FindAllString(blk.text[i:], -1)...)
	}
	return lines
}

// stepLine is the work-log line of step k: its calls, bounded, and the
// first line of each output, bounded; a turn without calls by its text.
func stepLine(t *trajectory.Trajectory, k int, refs []string) string {
	s := t.Steps[k]
	var parts []string
	for n, c := range s.Calls {
		p := c.Name + " " + clip(oneLine(string(c.Arguments)), 120)
		if n < len(s.Results) {
			p += " → " + clip(firstLine(s.Results[n]), 100)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = append(parts, "said: "+clip(oneLine(s.Text), 100))
	}
	head := fmt.Sprintf("step %d", k)
	if len(refs) > 0 {
		head += " [" + strings.Join(refs, " ") + "]"
	}
	return head + ": " + strings.Join(parts, "; ")
}

// maxSummaryChars bounds one Compress summary, as a careful model keeps
// one short (about a thousand tokens); maxCompactChars bounds a whole
// conversation's compaction summary (about four thousand).
const (
	maxSummaryChars = 4000
	maxCompactChars = 16000
)

// workLogText is a summary of work-log lines within maxSummaryChars.
func workLogText(lines []string) string {
	first, last := stepOf(lines[0]), stepOf(lines[len(lines)-1])
	head := fmt.Sprintf("%s%d–%d, done; each output is archived whole under its ref (read_archive).\n", workLogHead, first, last)
	return boundedLog(head, lines, maxSummaryChars)
}

// boundedLog is head and the lines within limit characters: past it the
// oldest lines lose their outputs, then go.
func boundedLog(head string, lines []string, limit int) string {
	lines = slices.Clone(lines)
	size := len(head)
	for _, l := range lines {
		size += len(l) + 1
	}
	for i := 0; i < len(lines) && size > limit; i++ {
		c := condense(lines[i])
		size -= len(lines[i]) - len(c)
		lines[i] = c
	}
	for len(lines) > 1 && size > limit {
		size -= len(lines[0]) + 1
		lines = lines[1:]
	}
	return head + strings.Join(lines, "\n")
}

var outputPart = regexp.MustCompile(` → [^;]*`)

// condense is a work-log line without its outputs, bounded.
func condense(line string) string {
	return clip(outputPart.ReplaceAllString(line, ""), 110)
}

func stepOf(line string) int {
	if l := logLine.FindStringSubmatch(line); l != nil {
		n, _ := strconv.Atoi(l[1])
		return n
	}
	return 0
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "(no output)"
}

// clip bounds s to n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
