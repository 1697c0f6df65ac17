package activity

import (
	"math"
	"slices"
	"strings"
)

// Figures are the counts and latency of a set of calls.
type Figures struct {
	// Name is the server, or "server:tool".
	Name   string `json:"name"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	// P50MS and P95MS are latency percentiles in milliseconds (nearest
	// rank).
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
}

// ErrorRate is Errors over Calls (0 with no calls).
func (f Figures) ErrorRate() float64 {
	if f.Calls == 0 {
		return 0
	}
	return float64(f.Errors) / float64(f.Calls)
}

// Summary is Figures by server and by tool, each sorted by name.
type Summary struct {
	Servers []Figures `json:"servers"`
	Tools   []Figures `json:"tools"`
}

// Summary is the figures of every call l keeps.
func (l *Log) Summary() Summary { return Summarize(l.Recent(Filter{}, 0)) }

// Summarize computes the figures of entries.
func Summarize(entries []Entry) Summary {
	type acc struct {
		errors int
		ms     []float64
	}
	servers, tools := map[string]*acc{}, map[string]*acc{}
	add := func(m map[string]*acc, k string, e Entry) {
		a := m[k]
		if a == nil {
			a = &acc{}
			m[k] = a
		}
		a.ms = append(a.ms, e.DurationMS)
		if !e.OK() {
			a.errors++
		}
	}
	for _, e := range entries {
		add(servers, e.Server, e)
		add(tools, e.Server+":"+e.Tool, e)
	}
	figures := func(m map[string]*acc) []Figures {
		out := make([]Figures, 0, len(m))
		for k, a := range m {
			slices.Sort(a.ms)
			out = append(out, Figures{Name: k, Calls: len(a.ms), Errors: a.errors, P50MS: rank(a.ms, 0.50), P95MS: rank(a.ms, 0.95)})
		}
		slices.SortFunc(out, func(a, b Figures) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	return Summary{Servers: figures(servers), Tools: figures(tools)}
}

// rank is the nearest-rank percentile p of sorted (non-empty).
func rank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
