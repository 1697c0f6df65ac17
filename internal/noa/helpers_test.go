package noa

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
)

// memArchiver is the in-memory Archiver used by the tests. failOn makes the
// n-th Write (1-based, counted over the archiver's life) fail.
type memArchiver struct {
	mu      sync.Mutex
	files   map[string][]byte
	writes  int
	failOn  map[int]bool
	removed []string
}

func newMemArchiver() *memArchiver {
	return &memArchiver{files: map[string][]byte{}, failOn: map[int]bool{}}
}

var errDiskFull = errors.New("disk full")

func (a *memArchiver) Write(tier Tier, blockID, startRef, endRef string, content []byte) (string, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writes++
	if a.failOn[a.writes] {
		return "", "", errDiskFull
	}
	rel := ArchiveTierDir(tier) + "/" + ArchiveFileName(blockID, startRef, endRef)
	abs := "/archive/" + rel
	a.files[abs] = append([]byte(nil), content...)
	return abs, rel, nil
}

func (a *memArchiver) Remove(abs string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.files[abs]; !ok {
		return fmt.Errorf("removing %s: not found", abs)
	}
	delete(a.files, abs)
	a.removed = append(a.removed, abs)
	return nil
}

func (a *memArchiver) snapshot() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]string{}
	for k, v := range a.files {
		out[k] = string(v)
	}
	return out
}

func (a *memArchiver) paths() []string {
	var out []string
	for k := range a.snapshot() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// convo builds deterministic conversations.
type convo struct {
	msgs []CoreMessage
	n    int
	rng  *rand.Rand
}

func newConvo(seed int64) *convo { return &convo{rng: rand.New(rand.NewSource(seed))} }

func (c *convo) id(prefix string) string {
	c.n++
	return fmt.Sprintf("%s%04d", prefix, c.n)
}

var words = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
	"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu path/to/file.go:12 " +
	"error timeout retry cache index session archive block summary")

func (c *convo) text(nwords int) string {
	var b strings.Builder
	for i := 0; i < nwords; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[c.rng.Intn(len(words))])
	}
	return b.String()
}

func (c *convo) user(nwords int) CoreMessage {
	m := CoreMessage{ID: c.id("u"), Role: RoleUser, ContentType: CTText, Text: "user: " + c.text(nwords)}
	c.msgs = append(c.msgs, m)
	return m
}

func (c *convo) assistant(nwords int) CoreMessage {
	m := CoreMessage{ID: c.id("a"), Role: RoleAssistant, ContentType: CTText, Text: c.text(nwords)}
	c.msgs = append(c.msgs, m)
	return m
}

func (c *convo) reasoning(nwords int) CoreMessage {
	m := CoreMessage{ID: c.id("r"), Role: RoleAssistant, ContentType: CTReasoning, Text: "thinking: " + c.text(nwords)}
	c.msgs = append(c.msgs, m)
	return m
}

// tool appends one call and its result.
func (c *convo) tool(name string, resultWords int) (CoreMessage, CoreMessage) {
	callID := c.id("call")
	call := CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: name, ToolCallID: callID,
		Text: fmt.Sprintf(`{"q":%q}`, c.text(4))}
	res := CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: name, ToolCallID: callID,
		Text: c.text(resultWords)}
	c.msgs = append(c.msgs, call, res)
	return call, res
}

// parallel appends n calls followed by their n results.
func (c *convo) parallel(name string, n, resultWords int) {
	var calls, results []CoreMessage
	for i := 0; i < n; i++ {
		callID := c.id("call")
		calls = append(calls, CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: name, ToolCallID: callID, Text: `{}`})
		results = append(results, CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: name, ToolCallID: callID, Text: c.text(resultWords)})
	}
	c.msgs = append(c.msgs, calls...)
	c.msgs = append(c.msgs, results...)
}

// compress appends a Compress call and returns it; the result is appended by
// the caller once the panel is known.
func (c *convo) compressCall(ranges []CompressRange) CoreMessage {
	callID := c.id("ccall")
	m := CoreMessage{ID: c.id("cc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: CompressToolName, ToolCallID: callID,
		Text: compressArgsJSON(ranges)}
	c.msgs = append(c.msgs, m)
	return m
}

func (c *convo) compressResult(call CoreMessage, panel string) {
	c.msgs = append(c.msgs, CoreMessage{ID: c.id("cr"), Role: RoleTool, ContentType: CTToolResult, ToolName: CompressToolName,
		ToolCallID: call.ToolCallID, Text: panel})
}

// randomTurn appends a random mix: user turns, reasoning runs, tool calls
// (some parallel, some protected), assistant text.
func (c *convo) randomTurn(protectedTool string) {
	switch r := c.rng.Intn(10); {
	case r == 0:
		c.user(5 + c.rng.Intn(30))
	case r <= 2:
		c.reasoning(5 + c.rng.Intn(20))
		c.tool("search", 20+c.rng.Intn(200))
	case r == 3:
		c.reasoning(5 + c.rng.Intn(10))
		c.parallel("read", 2+c.rng.Intn(2), 10+c.rng.Intn(100))
	case r == 4 && protectedTool != "":
		c.tool(protectedTool, 10+c.rng.Intn(40))
	case r == 5:
		c.assistant(5 + c.rng.Intn(40))
	default:
		c.tool("fetch", 30+c.rng.Intn(300))
	}
}

func deepCopyMsgs(m []CoreMessage) []CoreMessage { return append([]CoreMessage(nil), m...) }

// durable is the part of the state the log determines.
type durable struct {
	Blocks        []CompressionBlock
	ByRaw, ByRef  map[string]string
	TokenSnapshot map[string]int
	NextBlockID   int
	Compressions  int
	BlocksCreated int
	Tokens        int
}

func durableOf(s CompressionState) durable {
	return durable{s.Blocks, s.MessageRefs.ByRaw, s.MessageRefs.ByRef, s.TokenSnapshot, s.NextBlockID,
		s.Stats.Compressions, s.Stats.BlocksCreated, s.Stats.TokensCompressed}
}
