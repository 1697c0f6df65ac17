package learn

import (
	"strings"
	"sync"
)

// DefaultMaxSteps is the longest episode that teaches: searches and
// descriptions since the last successful call. A longer hunt is more likely
// to end at a tool chosen for want of a better one.
const DefaultMaxSteps = 4

// maxSessions bounds the episodes kept at once; past it the oldest is
// dropped (a client that never ends its sessions cannot grow the map).
const maxSessions = 4096

// Episodes follows each session's search episode: the retrieve_tools
// searches and describe_tool calls since its last successful call. Its
// methods are safe for concurrent use.
type Episodes struct {
	// MaxSteps is the longest episode that teaches; zero means
	// DefaultMaxSteps.
	MaxSteps int

	mu    sync.Mutex
	m     map[string]*episode
	order []string // session keys, oldest first
}

type episode struct {
	queries   []string
	shown     map[string]bool // the last search's answer
	described map[string]bool
	steps     int
}

func (e *Episodes) get(session string) *episode {
	if e.m == nil {
		e.m = map[string]*episode{}
	}
	ep := e.m[session]
	if ep == nil {
		if len(e.order) >= maxSessions {
			delete(e.m, e.order[0])
			e.order = e.order[1:]
		}
		ep = &episode{described: map[string]bool{}}
		e.m[session] = ep
		e.order = append(e.order, session)
	}
	return ep
}

// Searched records a search of the session and the tool ids its answer
// showed.
func (e *Episodes) Searched(session, query string, shown []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.get(session)
	ep.steps++
	ep.queries = append(ep.queries, query)
	ep.shown = make(map[string]bool, len(shown))
	for _, id := range shown {
		ep.shown[id] = true
	}
}

// Described records a describe_tool call of the session.
func (e *Episodes) Described(session, tool string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.get(session)
	ep.steps++
	ep.described[tool] = true
}

// Called records a call of tool (its id, "server:name") by the session. A
// successful call ends the episode and returns the queries it teaches:
// those of an episode that searched, whose last search showed tool or that
// described it, no longer than MaxSteps, none of whose queries names the
// tool outright (nothing to learn there). A failed call teaches nothing
// and leaves the episode open.
func (e *Episodes) Called(session, tool string, ok bool) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		return nil
	}
	ep := e.m[session]
	if ep == nil {
		return nil
	}
	e.endLocked(session)
	maxSteps := e.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	if len(ep.queries) == 0 || ep.steps > maxSteps || !ep.shown[tool] && !ep.described[tool] {
		return nil
	}
	name := strings.ToLower(tool)
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	for _, q := range ep.queries {
		if strings.Contains(strings.ToLower(q), name) {
			return nil
		}
	}
	return ep.queries
}

// End forgets the session's episode (the session closed).
func (e *Episodes) End(session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endLocked(session)
}

func (e *Episodes) endLocked(session string) {
	if _, ok := e.m[session]; !ok {
		return
	}
	delete(e.m, session)
	for i, s := range e.order {
		if s == session {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
}
