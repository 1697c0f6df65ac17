package trajectory

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Ext is the file name ending of a stored trajectory.
const Ext = ".json.gz"

// Trajectory is one agent run: what the agent was told and, in order, every
// assistant turn and what came back.
type Trajectory struct {
	ID     string `json:"id"`
	Agent  string `json:"agent"`  // agent and version, e.g. "mini-swe-agent 2.2.7"
	Model  string `json:"model"`  // the model that produced the assistant turns
	Task   string `json:"task"`   // the benchmark instance, e.g. "django__django-11910"
	Source string `json:"source"` // repository@commit:path the run was converted from

	System      string `json:"system"`
	Tools       []Tool `json:"tools"`
	TaskMessage string `json:"task_message"` // the first user message
	Steps       []Step `json:"steps"`
}

// Tool is a tool the agent declared to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // a JSON Schema object
}

// Step is one assistant turn and what answered it.
type Step struct {
	Text  string `json:"text,omitempty"`  // the assistant's text
	Calls []Call `json:"calls,omitempty"` // its tool calls, in order
	// Results holds one observation per call, whole and in call order; it is
	// empty only on the last step of a run that ended on a call.
	Results []string `json:"results,omitempty"`
	// User holds plain user messages that followed the results: an agent's
	// format-error feedback, or in a Session the next task.
	User []string `json:"user,omitempty"`
}

// Call is one tool call.
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a JSON object
}

// DefaultDir is where the runs live in the repository, committed with
// their licences (SOURCES.md): the directory `mcproxy bench import` writes
// to by default. It is relative to the working directory, the repository
// root when run from a clone. Open's default is the copy of it built into
// the binary.
const DefaultDir = "bench/trajectory/runs"

// builtIn is DefaultDir compiled in, so that `mcproxy bench gateway`
// replays the committed runs from any directory.
//
//go:embed runs
var builtIn embed.FS

// BuiltIn is Store.Dir of the store Open returns by default.
const BuiltIn = "built in"

// DirEnv names the environment variable that points Open at another
// directory of runs.
const DirEnv = "MCPROXY_TRAJECTORIES"

// Options say where Open reads runs from.
type Options struct {
	Dir    string              // zero: $MCPROXY_TRAJECTORIES, else the built-in runs
	Getenv func(string) string // nil: os.Getenv
}

// Store is a directory of runs, one id+Ext file each.
type Store struct {
	fsys fs.FS
	// Dir is the directory the runs are read from, for messages (BuiltIn
	// for the copy in the binary).
	Dir string
}

// Open resolves the directory of runs: o.Dir when set, else
// $MCPROXY_TRAJECTORIES, else the runs built into the binary (DefaultDir).
// It reads nothing yet.
func Open(o Options) Store {
	dir := o.Dir
	if dir == "" {
		getenv := o.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		dir = getenv(DirEnv)
	}
	if dir == "" {
		sub, err := fs.Sub(builtIn, "runs")
		if err != nil {
			panic(err) // "runs" is a valid path: fs.Sub cannot fail on it
		}
		return Store{fsys: sub, Dir: BuiltIn}
	}
	return Store{fsys: os.DirFS(dir), Dir: dir}
}

// ErrNotFound is returned by Load when no stored trajectory has the id.
var ErrNotFound = errors.New("trajectory not found")

// Load reads the trajectory id (its file is id+Ext in the store's directory).
func (s Store) Load(id string) (*Trajectory, error) {
	f, err := s.fsys.Open(id + Ext)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("loading trajectory %q from %s: %w", id, s.Dir, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("loading trajectory %q from %s: %w", id, s.Dir, err)
	}
	defer f.Close()
	t, err := decode(f)
	if err != nil {
		return nil, fmt.Errorf("loading trajectory %q from %s: %w", id, s.Dir, err)
	}
	if t.ID != id {
		return nil, fmt.Errorf("loading trajectory %q from %s: file holds id %q", id, s.Dir, t.ID)
	}
	return t, nil
}

// LoadAll reads every trajectory in the store's directory, ordered by id. A
// missing or empty directory is an error: a benchmark of no runs measures
// nothing.
func (s Store) LoadAll() ([]*Trajectory, error) {
	hint := fmt.Sprintf("point Options.Dir or $%s at a directory of *%s runs, or leave both unset for the built-in ones", DirEnv, Ext)
	entries, err := fs.ReadDir(s.fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("listing trajectories in %s (%s): %w", s.Dir, hint, err)
	}
	var out []*Trajectory
	for _, e := range entries { // ReadDir sorts by name, so by id
		if e.IsDir() || !strings.HasSuffix(e.Name(), Ext) {
			continue
		}
		t, err := s.Load(strings.TrimSuffix(e.Name(), Ext))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no trajectories in %s: %s", s.Dir, hint)
	}
	return out, nil
}

func decode(r io.Reader) (*Trajectory, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("opening gzip: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("reading gzip: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Trajectory
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("decoding json: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Validate reports the first way t is not a conversation a provider would
// accept: a turn with nothing in it, a call without its result before the
// next turn, two assistant turns in a row, or arguments that are not a JSON
// object.
func (t *Trajectory) Validate() error {
	if t.ID == "" || t.TaskMessage == "" {
		return errors.New("trajectory needs an id and a task message")
	}
	if len(t.Steps) == 0 {
		return fmt.Errorf("trajectory %q has no steps", t.ID)
	}
	for i, tool := range t.Tools {
		if tool.Name == "" || !isObject(tool.InputSchema) {
			return fmt.Errorf("trajectory %q: tool %d needs a name and an object input_schema", t.ID, i)
		}
	}
	last := len(t.Steps) - 1
	for i, s := range t.Steps {
		if s.Text == "" && len(s.Calls) == 0 {
			return fmt.Errorf("trajectory %q: step %d has neither text nor calls", t.ID, i)
		}
		for j, c := range s.Calls {
			if c.Name == "" || !isObject(c.Arguments) {
				return fmt.Errorf("trajectory %q: step %d call %d needs a name and object arguments", t.ID, i, j)
			}
		}
		complete := len(s.Results) == len(s.Calls)
		if i == last && len(s.Results) == 0 {
			continue
		}
		if !complete {
			return fmt.Errorf("trajectory %q: step %d has %d calls but %d results", t.ID, i, len(s.Calls), len(s.Results))
		}
		if i < last && len(s.Calls) == 0 && len(s.User) == 0 {
			return fmt.Errorf("trajectory %q: step %d is followed by another assistant turn with no user turn between", t.ID, i)
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// Session joins parts into one conversation with the given id: the steps of
// each part in turn, the next part's task message sent as a user message
// right after the previous part's last results. The parts must share the
// system prompt and tools (one agent, one configuration) and every part but
// the last must end with its results in; the parts are not modified.
func Session(id string, parts ...*Trajectory) (*Trajectory, error) {
	if len(parts) == 0 {
		return nil, errors.New("building session: no parts")
	}
	first := parts[0]
	s := &Trajectory{
		ID: id, Agent: first.Agent, Model: first.Model, System: first.System,
		Tools: first.Tools, TaskMessage: first.TaskMessage,
	}
	var tasks, sources []string
	for i, p := range parts {
		if p.System != first.System || !sameTools(p.Tools, first.Tools) {
			return nil, fmt.Errorf("building session %q: part %q has another system prompt or tools than %q", id, p.ID, first.ID)
		}
		tasks = append(tasks, p.Task)
		sources = append(sources, p.ID)
		start := len(s.Steps)
		for _, st := range p.Steps {
			s.Steps = append(s.Steps, cloneStep(st))
		}
		if i == 0 {
			continue
		}
		prev := &s.Steps[start-1]
		if len(prev.Results) != len(prev.Calls) {
			return nil, fmt.Errorf("building session %q: part %q ends on a call without its result", id, parts[i-1].ID)
		}
		prev.User = append(prev.User, p.TaskMessage)
	}
	s.Task = strings.Join(tasks, "+")
	s.Source = "session of " + strings.Join(sources, ", ")
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("building session %q: %w", id, err)
	}
	return s, nil
}

func cloneStep(s Step) Step {
	s.Calls = append([]Call(nil), s.Calls...)
	s.Results = append([]string(nil), s.Results...)
	s.User = append([]string(nil), s.User...)
	return s
}

func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].InputSchema, b[i].InputSchema) {
			return false
		}
	}
	return true
}

// LongSessionParts are the runs LongSession joins: one agent and model, four
// tasks, together past 200K tokens of history (301,589 by Stats when the
// runs were converted; SOURCES.md lists them). The tests hold the same
// property on the fixture in testdata, at its own scale.
var LongSessionParts = []string{
	"gemini-3-pro.sphinx-doc__sphinx-9229",
	"gemini-3-pro.django__django-11138",
	"gemini-3-pro.pylint-dev__pylint-6528",
	"gemini-3-pro.scikit-learn__scikit-learn-25102",
}

// LongSessionID is the id of the session LongSession builds.
const LongSessionID = "long-session.gemini-3-pro"

// LongSession loads LongSessionParts from the store and joins them.
func (s Store) LongSession() (*Trajectory, error) {
	return s.Session(LongSessionID, LongSessionParts...)
}

// Session loads the runs partIDs from the store and joins them, in that
// order, with Session under the given id.
func (s Store) Session(id string, partIDs ...string) (*Trajectory, error) {
	parts := make([]*Trajectory, 0, len(partIDs))
	for _, p := range partIDs {
		t, err := s.Load(p)
		if err != nil {
			return nil, fmt.Errorf("building session %q: %w", id, err)
		}
		parts = append(parts, t)
	}
	return Session(id, parts...)
}
