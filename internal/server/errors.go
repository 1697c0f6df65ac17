package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/fuzzy"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// The texts below are read by a model in the middle of a task: each says
// what went wrong and what call to make next.

// unknownToolText explains that id names no tool and offers the closest ids.
func unknownToolText(id string, suggestions []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unknown tool %q.", shownID(id))
	if len(suggestions) > 0 {
		fmt.Fprintf(&b, " Closest matches: %s.", strings.Join(suggestions, ", "))
	}
	b.WriteString(` Tool ids have the form "server:tool"; use retrieve_tools to find the right one and pass its id exactly.`)
	return b.String()
}

// downText explains that a server is not reachable and when it is retried.
func downText(e *upstream.DownError, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Server %q is unavailable (state: %s).", e.Server, e.State)
	if e.LastError != "" {
		fmt.Fprintf(&b, " Last error: %s.", strings.TrimSuffix(e.LastError, "."))
	}
	switch {
	case e.State == upstream.StateDisabled:
		b.WriteString(" It is disabled in the mcproxy config; its tools cannot be called until it is enabled.")
	case e.State == upstream.StateMisconfigured:
		b.WriteString(" Its entry in the mcproxy config has the problems above, so it was not started; retrying will not help until the user fixes them (mcproxy applies the saved file by itself).")
	case e.State == upstream.StateNeedsSignIn:
		b.WriteString(" Retrying will not help until the user signs in: ask them to run the command above, then retry.")
	case !e.RetryAt.IsZero():
		wait := e.RetryAt.Sub(now).Round(time.Second)
		if wait < 0 {
			wait = 0
		}
		fmt.Fprintf(&b, " mcproxy reconnects at %s (in %s); retry the call after that.", e.RetryAt.UTC().Format("15:04:05 UTC"), wait)
	default:
		b.WriteString(" mcproxy is reconnecting; retry the call shortly.")
	}
	b.WriteString(" Tools of other servers still work.")
	return b.String()
}

// timeoutText names the limit that was hit, the setting it came from and
// the one to change.
func timeoutText(e *upstream.TimeoutError) string {
	own := "mcpServers." + e.Server + ".call_timeout"
	var from, raise string
	switch e.Setting {
	case own:
		from, raise = "the limit set by "+own, "raise "+own
	case "call_timeout":
		from, raise = "the limit set by the top-level call_timeout", "raise call_timeout, or set "+own+" for this server alone,"
	default:
		from, raise = "the default call_timeout", "set "+own+" (or the top-level call_timeout)"
	}
	return fmt.Sprintf("Calling %s:%s timed out after %s (%s). The tool may still be running upstream. "+
		"If it needs longer, %s in the mcproxy config; otherwise retry with a smaller request.",
		e.Server, e.Tool, e.Limit, from, raise)
}

// badArgumentsText says what shape call_tool's arguments must have.
func badArgumentsText(id, problem string, schema []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Bad arguments for %s: %s.", id, problem)
	b.WriteString(badArgumentsHint(schema))
	return b.String()
}

// rejectedText explains a call the upstream refused as invalid (JSON-RPC
// invalid params): usually arguments that do not fit the schema.
func rejectedText(id string, err error, schema []byte, args map[string]any) string {
	check := "Check the arguments."
	if p := argumentProblems(schema, args); p != "" {
		check = "The arguments do not fit: " + p + "."
	}
	return fmt.Sprintf("%s rejected the call as invalid (%v). %s", id, err, check) + badArgumentsHint(schema)
}

// maxListedParams caps the parameter names an argument mismatch lists.
const maxListedParams = 12

// argumentProblems compares args with the top level of a tool's input
// schema: required parameters that are missing, and names that are not
// parameters at all (when the schema lists its properties). It returns ""
// when it sees nothing wrong or the schema does not say.
func argumentProblems(schema []byte, args map[string]any) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var problems []string
	for _, name := range s.Required {
		if _, ok := args[name]; !ok {
			problems = append(problems, fmt.Sprintf("%q is required and missing", name))
		}
	}
	if len(s.Properties) > 0 {
		var unknown []string
		for name := range args {
			if _, ok := s.Properties[name]; !ok {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		for _, name := range unknown {
			problems = append(problems, fmt.Sprintf("%q is not one of its parameters", name))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > 0 {
		listed := names
		if len(listed) > maxListedParams {
			listed = append(slices.Clone(listed[:maxListedParams]), "...")
		}
		for i, name := range listed {
			if slices.Contains(s.Required, name) {
				listed[i] = name + " (required)"
			}
		}
		problems = append(problems, "its parameters are "+strings.Join(listed, ", "))
	}
	return strings.Join(problems, "; ")
}

// mismatchText is appended to an upstream's error result when the
// arguments visibly do not fit the tool's schema: the upstream's own
// wording is often about a validator's internals ("expected string,
// received undefined"), this says which names to fix. id is the tool's id
// as call_tool takes it, or "" in direct mode, where the client knows the
// tool by another name and has no describe_tool.
func mismatchText(id, problems string) string {
	if id == "" {
		return fmt.Sprintf("mcproxy: the arguments do not fit this tool: %s. Call it again with corrected arguments.", problems)
	}
	return fmt.Sprintf("mcproxy: the arguments do not fit %s: %s. Call it again with corrected arguments; describe_tool shows the full schema.", id, problems)
}

func badArgumentsHint(schema []byte) string {
	var b strings.Builder
	if len(schema) > 0 {
		fmt.Fprintf(&b, " Expected a JSON object matching this input schema: %s", compactJSON(schema))
	} else {
		b.WriteString(" Expected a JSON object of the tool's parameters; use describe_tool to see them.")
	}
	return b.String()
}

// suggest returns up to n ids from candidates closest to want, by edit
// distance over the whole id or over the tool name alone (plus one when the
// server differs), ties by id.
func suggest(want string, candidates []string, n int) []string {
	wantTool := want
	if _, tool, ok := strings.Cut(want, ":"); ok {
		wantTool = tool
	}
	wantLower, wantToolLower := strings.ToLower(want), strings.ToLower(wantTool)
	type scored struct {
		id   string
		dist int
	}
	var all []scored
	wantServer, _, hasServer := strings.Cut(wantLower, ":")
	wantWords := strings.FieldsFunc(wantToolLower, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	for _, id := range candidates {
		server, tool, _ := strings.Cut(id, ":")
		idLower, toolLower := strings.ToLower(id), strings.ToLower(tool)
		// The same tool name on another server is one step further away
		// than on the server the caller named.
		penalty := 0
		if hasServer && strings.ToLower(server) != wantServer {
			penalty = 1
		}
		d := min(fuzzy.Distance(wantLower, idLower), fuzzy.Distance(wantToolLower, toolLower)+penalty)
		// A distance above half the name's length is noise, not a typo,
		// unless every word of the wanted name is in the candidate.
		if d > max(len(wantTool), 4)/2+1 && !containsAll(toolLower, wantWords) {
			continue
		}
		all = append(all, scored{id, d})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, 0, n)
	for _, s := range all {
		if len(out) == n {
			break
		}
		out = append(out, s.id)
	}
	return out
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return len(words) > 0
}

// maxSuggestLen is the longest unknown tool id that gets "did you mean"
// suggestions when the catalog is empty or holds only shorter ids: an id
// longer than every known one plus this is answered "unknown tool" at once,
// since edit distance costs the product of the two lengths.
const maxSuggestLen = 64

// worthSuggesting reports whether id is short enough to look for close
// matches: no longer than the longest tool id in the catalog plus
// maxSuggestLen.
func (s *Server) worthSuggesting(id string) bool {
	if len(id) <= maxSuggestLen {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	longest := 0
	for known := range s.byID {
		longest = max(longest, len(known))
	}
	return len(id) <= longest+maxSuggestLen
}

// shownID is id as an error message quotes it: whole when short, else its
// start and its length, so a huge name is not echoed back whole.
func shownID(id string) string {
	const keep = 120
	if len(id) <= keep {
		return id
	}
	return fmt.Sprintf("%s... (%d bytes)", id[:keep], len(id))
}
