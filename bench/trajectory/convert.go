package trajectory

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
)

// The source formats Import reads (SOURCES.md, "How each run was
// converted", is the account of each).
const (
	// FormatMiniSWE1 is a mini-swe-agent trajectory (*.traj.json) whose
	// replies carry their command in a fenced bash block, as mini-swe-agent
	// 1.x runs do: no declared tools, each command answered by a user
	// message.
	FormatMiniSWE1 = "mini-swe-agent-1"
	// FormatMiniSWE2 is a mini-swe-agent trajectory whose replies make
	// native tool calls answered by tool messages, as mini-swe-agent 2.x
	// runs do.
	FormatMiniSWE2 = "mini-swe-agent-2"
	// FormatOpenHands is an OpenHands evaluation output (output.jsonl): one
	// JSON record per benchmark instance, each with its event history.
	FormatOpenHands = "openhands"
)

// Formats lists the source formats Import reads.
var Formats = []string{FormatMiniSWE1, FormatMiniSWE2, FormatOpenHands}

// ImportOptions say how Import reads a source file. The zero fields are
// taken from the record.
type ImportOptions struct {
	Format   string // one of Formats; zero: DetectFormat
	Instance string // OpenHands: the instance_id of the record to convert; zero: the file's only record
	ID       string // zero: Model + "." + Task
	Agent    string // zero: the agent and version the record names
	Model    string // zero: the model the record names, without its provider prefix
	Task     string // zero: the record's instance id
	Source   string // where the file came from, repository@commit:path; recorded as is
}

// BashTool is the tool declared for mini-swe-agent runs: the `bash` tool as
// mini-swe-agent 2.x declares it. 1.x declares none (its commands travel in
// fenced blocks); its runs get the same tool so that both replay alike.
var BashTool = Tool{
	Name:        "bash",
	Description: "Execute a bash command",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The bash command to execute"}},"required":["command"]}`),
}

// Import converts one agent run from a source file's bytes into a
// Trajectory and validates it. It moves pieces into place and changes no
// text, command or output.
func Import(data []byte, o ImportOptions) (*Trajectory, error) {
	format := o.Format
	if format == "" {
		var err error
		if format, err = DetectFormat(data); err != nil {
			return nil, err
		}
	}
	var (
		t   *Trajectory
		err error
	)
	switch format {
	case FormatMiniSWE1, FormatMiniSWE2:
		if o.Instance != "" {
			return nil, fmt.Errorf("the instance picks a record of OpenHands output; a %s file holds one run: leave the instance out", format)
		}
		t, err = importMiniSWE(data, format)
	case FormatOpenHands:
		t, err = importOpenHands(data, o.Instance)
	default:
		return nil, fmt.Errorf("unknown source format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s run: %w", format, err)
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{{&t.Agent, o.Agent}, {&t.Model, o.Model}, {&t.Task, o.Task}, {&t.Source, o.Source}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	t.ID = o.ID
	if t.ID == "" && (t.Model == "" || t.Task == "") {
		return nil, fmt.Errorf("the %s record names no model or no task to make the run's id of: give the id", format)
	}
	if t.ID == "" {
		t.ID = t.Model + "." + t.Task
	}
	if err := checkID(t.ID); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("the converted %s run is not a conversation a provider would accept: %w", format, err)
	}
	return t, nil
}

// checkID rejects an id that cannot be a file name in a store.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || strings.ContainsRune(id, 0) {
		return fmt.Errorf("trajectory id %q cannot name a file: give an id without slashes (e.g. model.instance)", id)
	}
	return nil
}

// DetectFormat names the source format of data: a JSON object with
// "messages" is a mini-swe-agent trajectory (FormatMiniSWE2 when any
// message makes or answers a tool call, else FormatMiniSWE1); JSON lines
// with "history" are OpenHands output.
func DetectFormat(data []byte) (string, error) {
	var msw struct {
		Messages []struct {
			Role      string            `json:"role"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"messages"`
	}
	if json.Unmarshal(data, &msw) == nil && msw.Messages != nil {
		for _, m := range msw.Messages {
			if m.Role == "tool" || len(m.ToolCalls) > 0 {
				return FormatMiniSWE2, nil
			}
		}
		return FormatMiniSWE1, nil
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(data), []byte("\n"))
	var oh struct {
		History json.RawMessage `json:"history"`
	}
	if json.Unmarshal(line, &oh) == nil && oh.History != nil {
		return FormatOpenHands, nil
	}
	return "", fmt.Errorf("cannot tell the source format: not a mini-swe-agent trajectory (a JSON object with \"messages\") nor OpenHands output (JSON lines with \"history\"); name it with the format option (%s)", strings.Join(Formats, ", "))
}

// builder assembles steps, matching each result to its call.
type builder struct {
	t       *Trajectory
	ids     []string // the open step's call ids
	results []string
	got     []bool
}

// turn closes the open step and opens one for an assistant turn.
func (b *builder) turn(text string, calls []Call, ids []string) error {
	if err := b.close(false); err != nil {
		return err
	}
	b.t.Steps = append(b.t.Steps, Step{Text: text, Calls: calls})
	b.ids, b.results, b.got = ids, make([]string, len(calls)), make([]bool, len(calls))
	return nil
}

// open reports whether the open step has a call still without its result.
func (b *builder) open() bool { return slices.Contains(b.got, false) }

// result answers the open step's call with the given id ("" for the first
// one still unanswered).
func (b *builder) result(id, content string) error {
	for i := range b.ids {
		if !b.got[i] && (b.ids[i] == id || id == "") {
			b.results[i], b.got[i] = content, true
			return nil
		}
	}
	if len(b.t.Steps) == 0 {
		return fmt.Errorf("a tool result (call id %q) comes before the first assistant turn", id)
	}
	return fmt.Errorf("step %d: a tool result answers call id %q, which the step does not make (or answers twice)", len(b.t.Steps)-1, id)
}

// user adds a plain user message after the open step.
func (b *builder) user(content string) error {
	if len(b.t.Steps) == 0 {
		return errors.New("a user message follows the task before any assistant turn")
	}
	if b.open() {
		return fmt.Errorf("step %d: a user message comes while a call still waits for its result", len(b.t.Steps)-1)
	}
	s := &b.t.Steps[len(b.t.Steps)-1]
	s.User = append(s.User, content)
	return nil
}

// close files the open step's results. Only the last step (last) may end
// with none of its calls answered.
func (b *builder) close(last bool) error {
	if len(b.t.Steps) == 0 {
		return nil
	}
	n := 0
	for _, g := range b.got {
		if g {
			n++
		}
	}
	switch {
	case n == len(b.got):
		b.t.Steps[len(b.t.Steps)-1].Results = b.results
	case n > 0 || !last:
		return fmt.Errorf("step %d: %d of its %d calls have no result", len(b.t.Steps)-1, len(b.got)-n, len(b.got))
	}
	b.ids, b.results, b.got = nil, nil, nil
	return nil
}

// mswRecord is the part of a mini-swe-agent trajectory the converter reads.
type mswRecord struct {
	Info struct {
		MiniVersion string `json:"mini_version"`
		Config      struct {
			Model struct {
				ModelName string `json:"model_name"`
			} `json:"model"`
		} `json:"config"`
	} `json:"info"`
	InstanceID string       `json:"instance_id"`
	Messages   []mswMessage `json:"messages"`
}

type mswMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
}

// text reads a message content that must be a string or null.
func text(raw json.RawMessage) (string, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("its content is not text")
	}
	if s == nil {
		return "", nil
	}
	return *s, nil
}

// calls converts tool calls as mini-swe-agent 2.x and OpenHands record
// them (OpenAI's shape), keeping each one's arguments as they were.
func calls(tcs []OpenAIToolCall) ([]Call, []string, error) {
	var cs []Call
	var ids []string
	for j, tc := range tcs {
		args := json.RawMessage(tc.Function.Arguments)
		if !isObject(args) {
			return nil, nil, fmt.Errorf("call %d (%s) has arguments that are not a JSON object", j, tc.Function.Name)
		}
		cs = append(cs, Call{Name: tc.Function.Name, Arguments: args})
		ids = append(ids, tc.ID)
	}
	return cs, ids, nil
}

// pySpace is the whitespace of Python's \s and str.strip on text, which
// mini-swe-agent's action regex and strip use.
const pySpace = "\t\n\v\f\r\x1c\x1d\x1e\x1f \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

// bashBlock is mini-swe-agent 1.x's default action regex,
// ```bash\s*\n(.*?)\n```, with Python's \s.
var bashBlock = regexp.MustCompile("(?s)```bash[" + pySpace + "]*\n(.*?)\n```")

func isPySpace(r rune) bool { return strings.ContainsRune(pySpace, r) }

// fencedCall splits a 1.x reply into its text and its bash call. A reply
// without exactly one block makes no call: the agent answered it with its
// format error.
func fencedCall(reply string) (string, []Call) {
	m := bashBlock.FindAllStringSubmatchIndex(reply, -1)
	if len(m) != 1 {
		return reply, nil
	}
	command := strings.TrimFunc(reply[m[0][2]:m[0][3]], isPySpace)
	args, _ := marshal(map[string]string{"command": command}) // a string map always encodes
	rest := strings.TrimFunc(reply[:m[0][0]]+reply[m[0][1]:], isPySpace)
	return rest, []Call{{Name: BashTool.Name, Arguments: args}}
}

func importMiniSWE(data []byte, format string) (*Trajectory, error) {
	var r mswRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding the trajectory: %w", err)
	}
	ms := r.Messages
	if len(ms) < 3 || ms[0].Role != "system" || ms[1].Role != "user" {
		return nil, errors.New("a trajectory starts with the system message, then the task's user message, then the agent's turns")
	}
	t := &Trajectory{Model: lastSegment(r.Info.Config.Model.ModelName), Task: r.InstanceID, Tools: []Tool{BashTool}}
	if r.Info.MiniVersion != "" {
		t.Agent = "mini-swe-agent " + r.Info.MiniVersion
	}
	var err error
	if t.System, err = text(ms[0].Content); err != nil {
		return nil, fmt.Errorf("message 0: %w", err)
	}
	if t.TaskMessage, err = text(ms[1].Content); err != nil {
		return nil, fmt.Errorf("message 1: %w", err)
	}
	b := &builder{t: t}
	for i, m := range ms[2:] {
		i += 2
		content, err := text(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		switch {
		case m.Role == "assistant" && format == FormatMiniSWE1:
			if len(m.ToolCalls) > 0 {
				return nil, fmt.Errorf("message %d makes tool calls: read the run as %s", i, FormatMiniSWE2)
			}
			rest, cs := fencedCall(content)
			err = b.turn(rest, cs, make([]string, len(cs)))
		case m.Role == "assistant":
			var cs []Call
			var ids []string
			if cs, ids, err = calls(m.ToolCalls); err == nil {
				err = b.turn(content, cs, ids)
			}
		case m.Role == "user" && format == FormatMiniSWE1 && b.open():
			err = b.result("", content) // the answer to the block's command
		case m.Role == "user":
			err = b.user(content)
		case m.Role == "tool" && format == FormatMiniSWE2:
			err = b.result(m.ToolCallID, content)
		case m.Role == "exit": // the submission, not a message
		default:
			err = fmt.Errorf("a %q message is not part of a %s run", m.Role, format)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return t, b.close(true)
}

// lastSegment drops a provider prefix: "google/gemini-3-pro-preview" is
// "gemini-3-pro-preview".
func lastSegment(model string) string {
	return model[strings.LastIndex(model, "/")+1:]
}

// ohRecord is the part of an OpenHands output record the converter reads.
type ohRecord struct {
	InstanceID string `json:"instance_id"`
	Metadata   struct {
		AgentClass string `json:"agent_class"`
		GitCommit  string `json:"git_commit"`
	} `json:"metadata"`
	History []ohEvent `json:"history"`
}

type ohEvent struct {
	ID          int             `json:"id"`
	Source      string          `json:"source"`
	Action      string          `json:"action"`
	Observation string          `json:"observation"`
	Content     string          `json:"content"`
	Args        json.RawMessage `json:"args"`
	Meta        *struct {
		ToolCallID    string `json:"tool_call_id"`
		ModelResponse struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content   json.RawMessage  `json:"content"`
					ToolCalls []OpenAIToolCall `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		} `json:"model_response"`
	} `json:"tool_call_metadata"`
}

// ohArgs is what the converter reads of an action's args.
type ohArgs struct {
	Content string       `json:"content"`
	Tools   []openAITool `json:"tools"` // as the agent declared them to the model
}

// ohRecordFor finds the record of instance in OpenHands output.
func ohRecordFor(data []byte, instance string) (*ohRecord, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	var ids []string
	var found *ohRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r ohRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		ids = append(ids, r.InstanceID)
		if r.InstanceID == instance || instance == "" {
			found = &r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case len(ids) == 0:
		return nil, errors.New("the file holds no records")
	case instance == "" && len(ids) > 1:
		return nil, fmt.Errorf("the file holds %d records (%s): name the one to convert by its instance id", len(ids), strings.Join(ids, ", "))
	case found == nil:
		return nil, fmt.Errorf("no record has instance id %q; the file holds %s", instance, strings.Join(ids, ", "))
	}
	return found, nil
}

func importOpenHands(data []byte, instance string) (*Trajectory, error) {
	r, err := ohRecordFor(data, instance)
	if err != nil {
		return nil, err
	}
	t := &Trajectory{Task: r.InstanceID, Agent: "OpenHands " + r.Metadata.AgentClass}
	if c := r.Metadata.GitCommit; c != "" {
		t.Agent += " (agent commit " + c[:min(len(c), 12)] + ")"
	}
	b := &builder{t: t}
	responses := map[string]bool{}
	task := false
	for _, e := range r.History {
		var args ohArgs
		if e.Action != "" && e.Args != nil {
			if err := json.Unmarshal(e.Args, &args); err != nil {
				return nil, fmt.Errorf("event %d (%s): reading its args: %w", e.ID, e.Action, err)
			}
		}
		var err error
		switch {
		case e.Action == "system":
			t.System = args.Content
			for _, tool := range args.Tools {
				t.Tools = append(t.Tools, Tool{Name: tool.Function.Name, Description: tool.Function.Description, InputSchema: tool.Function.Parameters})
			}
		case e.Action == "message" && e.Source == "user" && !task:
			t.TaskMessage, task = args.Content, true
		case e.Action == "message" && e.Source == "user":
			err = b.user(args.Content)
		case e.Action == "recall" || e.Observation == "recall" || e.Observation == "agent_state_changed" || e.Action == "change_agent_state":
			// the recalled workspace context and state changes are not messages
		case e.Action != "" && e.Meta != nil:
			mr := e.Meta.ModelResponse
			if responses[mr.ID] {
				break // a further call of a response already turned into a step
			}
			responses[mr.ID] = true
			if len(mr.Choices) == 0 {
				err = fmt.Errorf("model response %s has no choices", mr.ID)
				break
			}
			if t.Model == "" {
				t.Model = lastSegment(mr.Model)
			}
			msg := mr.Choices[0].Message
			var content string
			var cs []Call
			var ids []string
			if content, err = text(msg.Content); err == nil {
				if cs, ids, err = calls(msg.ToolCalls); err == nil {
					err = b.turn(content, cs, ids)
				}
			}
		case e.Action == "message" && e.Source == "agent":
			err = b.turn(args.Content, nil, nil) // a reply without calls
		case e.Observation != "" && e.Meta != nil:
			err = b.result(e.Meta.ToolCallID, e.Content)
		case e.Observation != "":
			err = b.user(e.Content) // an error no call can own
		default:
			err = fmt.Errorf("action %q without tool-call metadata is not something the converter knows", e.Action)
		}
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", e.ID, err)
		}
	}
	if t.System == "" || !task {
		return nil, errors.New("the history needs a system event and a user message with the task")
	}
	return t, b.close(true)
}

// Encode is the stored form of t: its JSON, gzip-compressed at the default
// level. It refuses a t that does not validate. The JSON is written as a
// client writes a request, without the HTML escaping encoding/json adds by
// default, so that a command's "&&" stays "&&" in its arguments as the
// agent sent it (and counts as it did).
func Encode(t *Trajectory) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	js, err := marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encoding trajectory %q: %w", t.ID, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ErrExists is returned by Write when the store already holds a run with
// the id and replacing it was not asked for.
var ErrExists = errors.New("a run with this id is already stored")

// Write stores t in the store's directory as t.ID+Ext, creating the
// directory if needed, and reads it back with Load, so what it wrote is a
// run the store serves. It replaces a stored run of the same id only when
// replace is set. It returns the file's path.
func (s Store) Write(t *Trajectory, replace bool) (string, error) {
	if err := checkID(t.ID); err != nil {
		return "", err
	}
	data, err := Encode(t)
	if err != nil {
		return "", fmt.Errorf("storing trajectory: %w", err)
	}
	path := filepath.Join(s.Dir, t.ID+Ext)
	if _, err := os.Stat(path); err == nil && !replace {
		return "", fmt.Errorf("storing trajectory %q in %s: %w", t.ID, s.Dir, ErrExists)
	}
	if err := atomicfile.WriteFile(path, data, atomicfile.Options{}); err != nil {
		return "", fmt.Errorf("storing trajectory %q in %s: %w", t.ID, s.Dir, err)
	}
	if _, err := s.Load(t.ID); err != nil {
		return "", fmt.Errorf("reading back what was stored: %w", err)
	}
	return path, nil
}
