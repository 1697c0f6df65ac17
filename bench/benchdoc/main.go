// Command benchdoc renders docs/benchmarks.md from the raw `go test -bench`
// outputs bench/scripts/benchmarks.sh saves, one file per group, and a
// template holding the prose. It measures nothing itself: every figure in
// the page comes from a saved run, each group's with the commit, date and
// command it was measured with.
//
//	go run ./bench/benchdoc -results bench/results -template docs/benchmarks.tmpl.md -out docs/benchmarks.md
//
// In the template, {{table "group"}} is a group's results as a table (one
// row per benchmark, one column per metric), {{metric "group" "Benchmark"
// "unit"}} one figure, {{ratio "group" "BenchmarkA" "BenchmarkB" "unit"}}
// A's figure over B's, {{run "group"}} the lines saying when and how the
// group was measured, {{measured "group"}} whether it has a saved run.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

func main() {
	results := flag.String("results", "bench/results", "directory of saved runs, <group>.txt each")
	tmpl := flag.String("template", "docs/benchmarks.tmpl.md", "the page's template")
	out := flag.String("out", "docs/benchmarks.md", "the page to write")
	flag.Parse()
	if err := run(*results, *tmpl, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

// group is one saved run: its header fields and its benchmark lines.
type group struct {
	name     string
	header   map[string]string // commit, date, command (one line per command)
	commands []string
	benches  []bench
}

// bench is one result line of `go test -bench`.
type bench struct {
	name    string // without the -GOMAXPROCS suffix
	n       int
	units   []string
	metrics map[string]float64
}

func run(resultsDir, tmplPath, outPath string) error {
	groups := map[string]*group{}
	entries, err := os.ReadDir(resultsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".txt") {
			continue
		}
		g, err := parse(filepath.Join(resultsDir, e.Name()))
		if err != nil {
			return err
		}
		groups[g.name] = g
	}
	text, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	missing := map[string]bool{}
	lookup := func(name string) (*group, error) {
		g, ok := groups[name]
		if !ok {
			missing[name] = true
			return nil, nil
		}
		return g, nil
	}
	t, err := template.New(filepath.Base(tmplPath)).Funcs(template.FuncMap{
		"run": func(name string) (string, error) {
			g, _ := lookup(name)
			if g == nil {
				return fmt.Sprintf("_Not measured yet: run `bench/scripts/benchmarks.sh %s`._", name), nil
			}
			machine := ""
			if m := g.header["machine"]; m != "" {
				machine = " (" + m + ")"
			}
			return fmt.Sprintf("Measured at commit `%s` on %s%s:\n\n```sh\n%s\n```", g.header["commit"], g.header["date"], machine, strings.Join(g.commands, "\n")), nil
		},
		"measured": func(name string) bool {
			_, ok := groups[name]
			return ok
		},
		"table": func(name string) (string, error) {
			g, _ := lookup(name)
			if g == nil {
				return "", nil
			}
			return g.table(), nil
		},
		"metric": func(name, benchName, unit string) (string, error) {
			g, _ := lookup(name)
			if g == nil {
				return "?", nil
			}
			v, err := g.value(benchName, unit)
			return format(v, unit), err
		},
		"ratio": func(name, a, b, unit string) (string, error) {
			g, _ := lookup(name)
			if g == nil {
				return "?", nil
			}
			va, err := g.value(a, unit)
			if err != nil {
				return "", err
			}
			vb, err := g.value(b, unit)
			if err != nil || vb == 0 {
				return "", fmt.Errorf("group %s: %s %s is missing or zero", name, b, unit)
			}
			return strconv.FormatFloat(va/vb, 'f', 2, 64) + "×", nil
		},
	}).Parse(string(text))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, nil); err != nil {
		return err
	}
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "benchdoc: no saved run for %s (the page says so)\n", strings.Join(names, ", "))
	}
	return os.WriteFile(outPath, buf.Bytes(), 0o644)
}

// value is one figure of the group; an error names what is missing.
func (g *group) value(benchName, unit string) (float64, error) {
	for _, b := range g.benches {
		if b.name == benchName {
			if v, ok := b.metrics[unit]; ok {
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("group %s has no %s %s", g.name, benchName, unit)
}

// parse reads a saved run: "# key: value" header lines, then the output of
// its commands.
func parse(path string) (*group, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := &group{name: strings.TrimSuffix(filepath.Base(path), ".txt"), header: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			if k, v, ok := strings.Cut(rest, ": "); ok {
				if k == "command" {
					g.commands = append(g.commands, v)
				} else {
					g.header[k] = v
				}
			}
			continue
		}
		if b, ok := parseBench(line); ok {
			g.benches = append(g.benches, b)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if g.header["commit"] == "" {
		return nil, fmt.Errorf("%s: no \"# commit: \" line (save runs with bench/scripts/benchmarks.sh)", path)
	}
	return g, nil
}

// parseBench reads "BenchmarkX/sub-2  N  v unit  v unit ...".
func parseBench(line string) (bench, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return bench{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return bench{}, false
	}
	name := f[0]
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	b := bench{name: name, n: n, metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return bench{}, false
		}
		b.units = append(b.units, f[i+1])
		b.metrics[f[i+1]] = v
	}
	return b, true
}

// table renders a group's results: one row per benchmark, the units in the
// order they first appear.
func (g *group) table() string {
	var units []string
	for _, b := range g.benches {
		for _, u := range b.units {
			if !slices.Contains(units, u) {
				units = append(units, u)
			}
		}
	}
	var s strings.Builder
	s.WriteString("| benchmark | runs |")
	for _, u := range units {
		s.WriteString(" " + u + " |")
	}
	s.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(units)) + "\n")
	for _, b := range g.benches {
		fmt.Fprintf(&s, "| %s | %d |", strings.TrimPrefix(b.name, "Benchmark"), b.n)
		for _, u := range units {
			if v, ok := b.metrics[u]; ok {
				s.WriteString(" " + format(v, u) + " |")
			} else {
				s.WriteString(" |")
			}
		}
		s.WriteString("\n")
	}
	return strings.TrimSuffix(s.String(), "\n")
}

// format shows a figure: times in ns as µs, ms or s; ratios with two
// decimals and an ×; everything else with three significant digits.
func format(v float64, unit string) string {
	switch {
	case unit == "B/op":
		switch {
		case v >= 1<<20:
			return sig(v/(1<<20)) + " MiB"
		case v >= 1<<10:
			return sig(v/(1<<10)) + " KiB"
		}
		return sig(v) + " B"
	case strings.HasSuffix(unit, "/s") || strings.HasSuffix(unit, "/op") && !strings.Contains(unit, "ns"):
		return sig(v) // a rate (MB/s), a count per operation
	case strings.HasPrefix(unit, "ns/") || strings.Contains(unit, "-ns/"):
		switch {
		case v >= 1e9:
			return strconv.FormatFloat(v/1e9, 'f', 2, 64) + " s"
		case v >= 1e6:
			return sig(v/1e6) + " ms"
		case v >= 1e3:
			return sig(v/1e3) + " µs"
		}
		return sig(v) + " ns"
	case strings.Contains(unit, "/") && !strings.HasSuffix(unit, "/call") && !strings.HasSuffix(unit, "/op"):
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	}
	return sig(v)
}

// sig formats v with three significant digits, without an exponent.
func sig(v float64) string {
	if v == 0 {
		return "0"
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		d = 0
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}
