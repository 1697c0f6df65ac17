package gatewaytest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// Agent is the model of a scenario (see NewScenario), for the Anthropic
// Messages API: a scriptedmodel.Script whose every answer is a pure
// function of the request it reads, as a model's is. It works the way an
// agent does:
//
//   - A reading step gets one read call per file it names, one per answer,
//     then a one-line report. A read is a read_file call when the request
//     offers read_file; otherwise, behind an MCP proxy's meta tools (a tool
//     named *call_tool), a call_tool of the read_text_file tool, whose id
//     it first looks up with *retrieve_tools.
//   - A question is answered from what the request shows ("KEY = value" in
//     a tool result or text). When only a summary still names the fact
//     ("KEY (value in m00042)"), it calls read_archive for that ref and
//     answers from the result. Otherwise it says it cannot find it.
//   - A nudge (when the Compress tool is offered) is obeyed first: the
//     ranges it lists (tier 1), or its range of blocks (tiers 2 and 3), go
//     into one Compress call, clipped so the step in progress is kept. Each
//     summary keeps the keys of the facts its range held and where each
//     value is: "FACT-007 (value in m00042)".
//   - With tool_choice none it answers in text.
func Agent(r *scriptedmodel.Request) scriptedmodel.Reply {
	if r.Path == "/v1/messages/count_tokens" {
		return scriptedmodel.Reply{}
	}
	v, err := readView(r.Body)
	if err != nil {
		return scriptedmodel.Say("I could not read the request: " + err.Error())
	}
	if !v.noTools && v.offers("Compress") && v.nudge != "" {
		if args, ok := v.compress(); ok {
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("", "Compress", args)}}
		}
	}
	step, at := v.step()
	switch {
	case strings.HasPrefix(step, questionOpening):
		key := factKey.FindString(step)
		if val, ok := v.value(key); ok {
			return scriptedmodel.Say(FactLine(key, val))
		}
		if ref, ok := v.pointer(key); ok && !v.noTools && v.offers("read_archive") {
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("", "read_archive", fmt.Sprintf(`{"ref":%q}`, ref))}}
		}
		return scriptedmodel.Say("I cannot find " + key + " any more.")
	case strings.HasPrefix(step, taskOpening):
		paths := filePath.FindAllString(step, -1)
		done := v.read(at)
		for _, p := range paths {
			if !done[p] && !v.noTools {
				if call, ok := v.readCall(p); ok {
					return scriptedmodel.Reply{Parts: []scriptedmodel.Part{call}}
				}
				return scriptedmodel.Say("I have no tool to read " + p + ".")
			}
		}
		return scriptedmodel.Say(fmt.Sprintf("Read %d files (%s): service logs, each a run of timed events.", len(paths), strings.Join(paths, ", ")))
	}
	return scriptedmodel.Say("What should I do?")
}

// readCall is the tool call that reads path with the tools the request
// offers (false when none can).
func (v *view) readCall(path string) (scriptedmodel.Part, bool) {
	if v.offers("read_file") {
		in, _ := json.Marshal(map[string]string{"path": path})
		return scriptedmodel.ToolCall("", "read_file", string(in)), true
	}
	call, retrieve := v.offered("call_tool"), v.offered("retrieve_tools")
	if call == "" {
		return scriptedmodel.Part{}, false
	}
	for _, b := range v.blocks {
		if id := readToolID.FindString(b.text); id != "" {
			in, _ := json.Marshal(map[string]any{"name": id, "arguments": map[string]string{"path": path}})
			return scriptedmodel.ToolCall("", call, string(in)), true
		}
	}
	if retrieve == "" {
		return scriptedmodel.Part{}, false
	}
	return scriptedmodel.ToolCall("", retrieve, `{"query":"read the contents of a text file"}`), true
}

// offered is the name of the offered tool whose name ends in suffix ("" if
// none): an MCP client prefixes a server's tools (mcp__mcproxy__call_tool).
func (v *view) offered(suffix string) string {
	for _, t := range v.tools {
		if strings.HasSuffix(t, suffix) {
			return t
		}
	}
	return ""
}

// readPath is the path a tool call reads: its input's "path", or that of
// its "arguments" (a call through call_tool); "" when it has none.
func readPath(input string) string {
	var in struct {
		Path      string `json:"path"`
		Arguments struct {
			Path string `json:"path"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal([]byte(input), &in)
	if in.Path != "" {
		return in.Path
	}
	return in.Arguments.Path
}

var (
	refTag      = regexp.MustCompile(`^\[(m\d{5}) · [^\]]+ tok\]$`)
	factKey     = regexp.MustCompile(`FACT-\d{3}`)
	factValue   = regexp.MustCompile(`(FACT-\d{3}) = ([a-z]+-\d{4})`)
	factPointer = regexp.MustCompile(`(FACT-\d{3}) \(value in (m\d{5})\)`)
	filePath    = regexp.MustCompile(`(?:/[A-Za-z0-9_.-]+)+\.[a-z]+`)
	readListed  = regexp.MustCompile(`Read \d+ files: (.*?)\.(?: |\n|$)`)
	readToolID  = regexp.MustCompile(`[A-Za-z0-9_.-]+:read_text_file\b`)
	tierOne     = regexp.MustCompile(`(?m)^  (m\d{5})–(m\d{5})  compressible`)
	blockRange  = regexp.MustCompile(`Range covering all of them: start=(b\d+) end=(b\d+)`)
	summaryHead = regexp.MustCompile(`^\[Compressed conversation section\] (b\d+)\(T\d\)`)
)

// summaryHeader opens noa's summary messages (noa.SummaryHeader).
const summaryHeader = "[Compressed conversation section]"

// block is one content block of the request, in order.
type block struct {
	msg  int
	role string
	typ  string
	text string // text, tool result content, tool_use input
	name string // tool_use name; for a tool_result, its call's
	id   string // tool_use id or tool_result's tool_use_id
	ref  string // the ref tag the gateway gave it, if any
}

// view is a request as the Agent reads it.
type view struct {
	blocks  []block
	tools   []string
	noTools bool // tool_choice none
	nudge   string
}

func readView(body []byte) (*view, error) {
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
	v := &view{noTools: req.ToolChoice.Type == "none"}
	for _, t := range req.Tools {
		v.tools = append(v.tools, t.Name)
	}
	names := map[string]string{}
	for i, m := range req.Messages {
		for _, raw := range blocks(m.Content) {
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
			blk := block{msg: i, role: m.Role, typ: b.Type}
			switch b.Type {
			case "text":
				if t := refTag.FindStringSubmatch(b.Text); t != nil && len(v.blocks) > 0 && v.blocks[len(v.blocks)-1].msg == i {
					v.blocks[len(v.blocks)-1].ref = t[1]
					continue
				}
				if strings.HasPrefix(b.Text, NudgeMarker) && i == len(req.Messages)-1 {
					v.nudge = b.Text
					continue
				}
				blk.text = b.Text
			case "tool_use":
				blk.text, blk.name, blk.id = string(b.Input), b.Name, b.ID
				names[b.ID] = b.Name
			case "tool_result":
				blk.id, blk.name = b.ToolUseID, names[b.ToolUseID]
				for _, c := range blocks(b.Content) {
					var t struct {
						Text string `json:"text"`
					}
					_ = json.Unmarshal(c, &t)
					if m := refTag.FindStringSubmatch(t.Text); m != nil {
						blk.ref = m[1]
						continue
					}
					blk.text += t.Text
				}
			}
			v.blocks = append(v.blocks, blk)
		}
	}
	return v, nil
}

func (v *view) offers(tool string) bool { return slices.Contains(v.tools, tool) }

// step is the user's newest step and the index of its block.
func (v *view) step() (string, int) {
	for i := len(v.blocks) - 1; i >= 0; i-- {
		b := v.blocks[i]
		if b.role == "user" && b.typ == "text" && (strings.HasPrefix(b.text, taskOpening) || strings.HasPrefix(b.text, questionOpening)) {
			return b.text, i
		}
	}
	return "", -1
}

// read is the set of paths read_file was called for after block at.
func (v *view) read(at int) map[string]bool {
	done := map[string]bool{}
	for _, b := range v.blocks[max(at, 0):] {
		if p := readPath(b.text); b.typ == "tool_use" && p != "" {
			done[p] = true
		}
		if b.typ == "text" && strings.HasPrefix(b.text, summaryHeader) {
			for _, p := range listedReads(b.text) {
				done[p] = true
			}
		}
	}
	return done
}

// value finds "key = value" anywhere but in summaries.
func (v *view) value(key string) (string, bool) {
	for i := len(v.blocks) - 1; i >= 0; i-- {
		for _, m := range factValue.FindAllStringSubmatch(v.blocks[i].text, -1) {
			if m[1] == key {
				return m[2], true
			}
		}
	}
	return "", false
}

// pointer finds the ref a summary gives for key's value.
func (v *view) pointer(key string) (string, bool) {
	for _, b := range v.blocks {
		for _, m := range factPointer.FindAllStringSubmatch(b.text, -1) {
			if m[1] == key {
				return m[2], true
			}
		}
	}
	return "", false
}

// compress writes the Compress call the nudge asks for; false when there
// is nothing it may compress.
func (v *view) compress() (string, bool) {
	type item struct {
		Start   string `json:"start"`
		End     string `json:"end"`
		Summary string `json:"summary"`
		Topic   string `json:"topic"`
	}
	var items []item
	if m := blockRange.FindStringSubmatch(v.nudge); m != nil {
		facts, paths := v.summarised(m[1], m[2])
		items = append(items, item{Start: m[1], End: m[2], Topic: "earlier log reading",
			Summary: summaryText(fmt.Sprintf("Blocks %s to %s: earlier log reading, all done. %s", m[1], m[2], readList(paths)), facts)})
	}
	// The user's newest message stays: the ranges are cut around it.
	_, stepAt := v.step()
	stepRef := ""
	if stepAt >= 0 {
		stepRef = v.blocks[stepAt].ref
	}
	var spans [][2]string
	for _, m := range tierOne.FindAllStringSubmatch(v.nudge, -1) {
		start, end := m[1], m[2]
		if stepRef == "" || end < stepRef || start > stepRef {
			spans = append(spans, [2]string{start, end})
			continue
		}
		if before := v.lastRefBefore(stepRef, start); before != "" {
			spans = append(spans, [2]string{start, before})
		}
		if after := v.firstRefAfter(stepRef, end); after != "" {
			spans = append(spans, [2]string{after, end})
		}
	}
	for _, sp := range spans {
		facts, paths := v.span(sp[0], sp[1])
		text := fmt.Sprintf("Finished work %s–%s, reported to the user. %s", sp[0], sp[1], readList(paths))
		items = append(items, item{Start: sp[0], End: sp[1], Topic: "log reading", Summary: summaryText(text, facts)})
	}
	if len(items) == 0 {
		return "", false
	}
	b, _ := json.Marshal(map[string]any{"content": items})
	return string(b), true
}

// listedReads are the files a summary's readList names.
func listedReads(summary string) []string {
	var out []string
	for _, m := range readListed.FindAllStringSubmatch(summary, -1) {
		out = append(out, filePath.FindAllString(m[1], -1)...)
	}
	return out
}

// readList names the files a summary's range read, every one, so a step in
// progress knows what it has done.
func readList(paths []string) string {
	if len(paths) == 0 {
		return "No files read."
	}
	return fmt.Sprintf("Read %d files: %s.", len(paths), strings.Join(paths, ", "))
}

// summaryText ends a summary with the facts' keys and where their values
// are.
func summaryText(head string, facts []string) string {
	s := head
	if len(facts) > 0 {
		s += " Facts: " + strings.Join(facts, "; ") + "."
	}
	return s + " Exact file contents are archived: read_archive with a ref above returns that message whole."
}

// firstRefAfter is the oldest ref tag above limit and not above end.
func (v *view) firstRefAfter(limit, end string) string {
	best := ""
	for _, b := range v.blocks {
		if b.ref != "" && b.ref > limit && b.ref <= end && (best == "" || b.ref < best) {
			best = b.ref
		}
	}
	return best
}

// lastRefBefore is the newest ref tag below limit and not below start.
func (v *view) lastRefBefore(limit, start string) string {
	best := ""
	for _, b := range v.blocks {
		if b.ref != "" && b.ref < limit && b.ref >= start && b.ref > best {
			best = b.ref
		}
	}
	return best
}

// span collects, for the refs start..end, the facts' pointers and the
// files read: from the tagged tool results in the span, from read_archive
// results (pointing where they were read from) and from summaries. The
// span runs from just after the last tagged block before start to just
// before the first tagged block after end, so the untagged calls around
// its results are in it.
func (v *view) span(start, end string) ([]string, []string) {
	lo, hi := 0, len(v.blocks)
	for i, b := range v.blocks {
		switch {
		case b.ref == "":
		case b.ref < start:
			lo = i + 1
		case b.ref > end && hi == len(v.blocks):
			hi = i
		}
	}
	if lo >= hi {
		return nil, nil
	}
	return v.facts(v.blocks[lo:hi])
}

// summarised collects the facts' pointers and the files read from the
// summaries of blocks from..to.
func (v *view) summarised(from, to string) ([]string, []string) {
	var in []block
	var paths []string
	lo, hi := blockNum(from), blockNum(to)
	for _, b := range v.blocks {
		m := summaryHead.FindStringSubmatch(b.text)
		if m == nil {
			continue
		}
		if n := blockNum(m[1]); n >= lo && n <= hi {
			in = append(in, b)
			paths = append(paths, listedReads(b.text)...)
		}
	}
	facts, _ := v.facts(in)
	return facts, paths
}

func blockNum(id string) int {
	n := 0
	fmt.Sscanf(id, "b%d", &n)
	return n
}

// facts lists "KEY (value in mNNNNN)" for every fact the blocks hold,
// sorted, and the files read_file was called for.
func (v *view) facts(bs []block) ([]string, []string) {
	seen := map[string]string{}
	archiveRef := map[string]string{} // read_archive call id -> its ref
	var paths []string
	for _, b := range bs {
		switch {
		case b.typ == "tool_use" && readPath(b.text) != "":
			paths = append(paths, readPath(b.text))
		case b.typ == "tool_use" && b.name == "read_archive":
			var in struct{ Ref string }
			_ = json.Unmarshal([]byte(b.text), &in)
			archiveRef[b.id] = in.Ref
		case b.typ == "tool_result" && b.name != "read_archive" && b.ref != "":
			for _, m := range factValue.FindAllStringSubmatch(b.text, -1) {
				seen[m[1]] = b.ref
			}
		case b.typ == "tool_result" && b.name == "read_archive" && archiveRef[b.id] != "":
			for _, m := range factValue.FindAllStringSubmatch(b.text, -1) {
				if _, ok := seen[m[1]]; !ok {
					seen[m[1]] = archiveRef[b.id]
				}
			}
		case b.typ == "text" && strings.HasPrefix(b.text, summaryHeader):
			for _, m := range factPointer.FindAllStringSubmatch(b.text, -1) {
				seen[m[1]] = m[2]
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + " (value in " + seen[k] + ")"
	}
	return out, paths
}
