package integrity

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// review checks server's current tools against the approvals, recording
// what it decides in a: a tool seen for the first time is approved as it
// is (trust on first use) unless quarantine is on or its text fails the
// screen; a tool whose definition is the approved one runs; anything else
// is held, its definition kept as pending with the reasons. It returns the
// reasons of each held tool by name, and whether a changed.
func (a *Approvals) review(server string, defs []Definition, quarantine bool, now time.Time) (map[string][]string, bool) {
	tools, known := a.Servers[server]
	changed := false
	if !known {
		tools = map[string]*Entry{}
		a.Servers[server] = tools
		changed = true
	}
	held := map[string][]string{}
	for _, d := range defs {
		h := d.Hash()
		e := tools[d.Name]
		if e == nil {
			e = &Entry{}
			tools[d.Name] = e
		}
		if e.Approved != nil && e.Approved.Hash == h {
			if e.Pending != nil { // the upstream went back to what was approved
				e.Pending = nil
				changed = true
			}
			continue
		}
		var reasons []string
		if e.Approved != nil {
			reasons = append(reasons, "its definition changed since it was approved ("+strings.Join(changedFields(e.Approved.Definition, d), ", ")+" differ)")
		} else if quarantine {
			reasons = append(reasons, "it is new and quarantine is on for this server")
		}
		for _, r := range Screen(d) {
			reasons = append(reasons, "its text holds "+r)
		}
		if len(reasons) == 0 {
			e.Approved = &Version{Hash: h, Definition: d, At: now}
			e.Pending = nil
			changed = true
			continue
		}
		held[d.Name] = reasons
		if e.Pending == nil || e.Pending.Hash != h || !slices.Equal(e.Pending.Reasons, reasons) {
			e.Pending = &Version{Hash: h, Definition: d, Reasons: reasons, At: now}
			changed = true
		}
	}
	return held, changed
}

// changedFields names the fields in which two definitions differ.
func changedFields(old, cur Definition) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("name", old.Name != cur.Name)
	add("title", old.Title != cur.Title)
	add("description", old.Description != cur.Description)
	add("inputSchema", !sameJSON(old.InputSchema, cur.InputSchema))
	add("outputSchema", !sameJSON(old.OutputSchema, cur.OutputSchema))
	add("annotations", !sameJSON(old.Annotations, cur.Annotations))
	return out
}

// sameJSON compares canonical forms: a definition read back from the
// approvals file has its raw JSON indented.
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return string(canonical(a)) == string(canonical(b))
}

func splitID(id string) (server, tool string) {
	server, tool, _ = strings.Cut(id, ":")
	return server, tool
}

func joinIDs(ids []string) string {
	const max = 10
	if len(ids) > max {
		return strings.Join(ids[:max], ", ") + fmt.Sprintf(" and %d more", len(ids)-max)
	}
	return strings.Join(ids, ", ")
}

// HeldError is returned for a call to a held tool. Its text is written for
// the model: what happened, that the user must act, and the commands.
type HeldError struct {
	Server, Tool string
	Reasons      []string
}

func (e *HeldError) Error() string {
	id := e.Server + ":" + e.Tool
	// The model gets the kinds of problem, not the matched text: that
	// text is what the tool wanted the model to read.
	kinds := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		if j := strings.LastIndex(r, ` ("`); j > 0 && strings.HasSuffix(r, `")`) {
			r = r[:j]
		}
		kinds[i] = r
	}
	return fmt.Sprintf("Tool %s is held by mcproxy and was not called: %s. Only the user can release it: "+
		"`mcproxy tools diff %s` shows the definition held for review, `mcproxy tools approve %s` approves it. "+
		"Tell the user; do not retry this tool until they have.", id, strings.Join(kinds, "; "), id, id)
}

// Held marks the error for fronts that branch on it without importing
// this package.
func (e *HeldError) Held() bool { return true }
