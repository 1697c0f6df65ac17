package bench

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/arms/armsio"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// builtinQueries are our graded query sets, compiled in so the binary can
// score the frozen corpora from anywhere.
//
//go:embed queries/*.queries.json
var builtinQueries embed.FS

// WriteReport writes report.json, report.md and report.svg into dir,
// creating it when needed.
func WriteReport(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{{"report.json", js}, {"report.md", []byte(rep.Markdown())}, {"report.svg", []byte(rep.SVG())}}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return nil
}

// AllArms is every arm the profiler knows, in report order.
func AllArms() []string {
	return []string{arms.BaselineName, arms.CompactName, arms.BriefName, arms.ToonListingName, arms.TronName, arms.TSCGName}
}

// AvailableArms is the default arm list: every arm that resolves. An arm
// whose runtime is missing (tscg without its npm package) is left out, with
// one note for the report saying why and how to add it.
func AvailableArms(r *arms.Registry) (names, notes []string) {
	for _, n := range AllArms() {
		if _, err := r.Resolve(n); err != nil {
			reason := strings.TrimSuffix(err.Error(), ": "+arms.ErrArmUnavailable.Error())
			notes = append(notes, fmt.Sprintf("%s: left out of the default arms: %s; then pass --arms with %s in the list", n, reason, n))
			continue
		}
		names = append(names, n)
	}
	return names, notes
}

// Registry holds the in-process arms and the TSCG arm, whose Node runtime
// may be missing (it then resolves to ErrArmUnavailable with the reason).
func Registry() *arms.Registry {
	r := arms.NewRegistry()
	for _, a := range []arms.Arm{arms.NewBaseline(), arms.NewCompact(), arms.NewBrief(), arms.NewToonListing(), arms.NewTron(), armsio.NewTSCG()} {
		if err := r.Register(a); err != nil {
			panic(err) // a duplicate built-in name is a bug in this list
		}
	}
	return r
}

// CheckCorpusNames refuses two corpora with the same name: their rows
// could not be told apart.
func CheckCorpusNames(cs []*Corpus) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Name] {
			return fmt.Errorf("two corpora are named %q: name them with --corpus NAME=PATH", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// AttachQuerySets pairs query sets with corpora by corpus_version: first the
// built-in sets, then each --queries file, which replaces a built-in set for
// the same corpus. Every label must name a tool of its corpus.
func AttachQuerySets(cs []*Corpus, files []string) (map[string]NamedQuerySet, error) {
	byVersion := map[string]*Corpus{}
	for _, c := range cs {
		if c.Version != "" {
			byVersion[c.Version] = c
		}
	}
	out := map[string]NamedQuerySet{}
	entries, err := builtinQueries.ReadDir("queries")
	if err != nil {
		return nil, fmt.Errorf("reading built-in query sets: %w", err)
	}
	for _, e := range entries {
		data, err := builtinQueries.ReadFile("queries/" + e.Name())
		if err != nil {
			return nil, err
		}
		qs, err := ParseQuerySet(data)
		if err != nil {
			return nil, fmt.Errorf("built-in query set %s: %w", e.Name(), err)
		}
		if c, ok := byVersion[qs.CorpusVersion]; ok {
			out[c.Name] = NamedQuerySet{Name: "bench/queries/" + e.Name(), Set: qs}
		}
	}
	for _, f := range files {
		qs, err := LoadQuerySet(f)
		if err != nil {
			return nil, err
		}
		c, ok := byVersion[qs.CorpusVersion]
		if !ok {
			var have []string
			for v := range byVersion {
				have = append(have, v)
			}
			sort.Strings(have)
			return nil, fmt.Errorf("query set %s grades corpus_version %q, but the loaded corpora are %s", f, qs.CorpusVersion, strings.Join(have, ", "))
		}
		out[c.Name] = NamedQuerySet{Name: filepath.Base(f), Set: qs}
	}
	for name, qs := range out {
		for _, c := range cs {
			if c.Name == name {
				if err := qs.Set.CheckTools(c.IDs()); err != nil {
					return nil, fmt.Errorf("query set %s against corpus %s: %w", qs.Name, name, err)
				}
			}
		}
	}
	return out, nil
}

// Capture connects to cfg's upstreams and returns every tool they list,
// and how many servers are configured. A server that does not come up fails
// the capture: a partial corpus would silently skew every later
// measurement.
func Capture(ctx context.Context, cfg *config.Config) ([]config.Tool, int, error) {
	m := upstream.New(cfg, upstream.Options{})
	defer m.Close()
	m.Start(ctx)
	var down []string
	for _, st := range m.Status() {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled {
			down = append(down, fmt.Sprintf("%s (%s: %s)", st.Server, st.State, st.LastError))
		}
	}
	if len(down) > 0 {
		return nil, 0, fmt.Errorf("not every upstream came up, nothing written: %s", strings.Join(down, "; "))
	}
	tools := m.Tools()
	if len(tools) == 0 {
		return nil, 0, errors.New("the upstreams expose no tools, nothing written")
	}
	return tools, len(m.Status()), nil
}
