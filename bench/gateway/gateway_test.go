package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/bench/trajectory"
)

// synthetic is a run of ours in the shape of a bash agent's: each step
// reads a module whose listing names a helper file, and twelve steps later
// the agent opens that helper (a later-needed fact), so compressing the
// old listings loses the path unless the summary or the archive keeps it.
func synthetic(id string, steps, lines int) *trajectory.Trajectory {
	t := &trajectory.Trajectory{ID: id, Agent: "bash agent (synthetic)", Model: "scripted-model", Task: id, Source: "bench/gateway tests",
		System:      "You are a careful engineer. Use the bash tool to inspect the repository; one command per turn.",
		Tools:       []trajectory.Tool{{Name: "bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}},
		TaskMessage: "Find why the totals in report " + id + " are off by one, and fix it."}
	for i := 0; i < steps; i++ {
		var cmd string
		switch {
		case i == steps-1:
			t.Steps = append(t.Steps, trajectory.Step{Text: "The totals were off by one in the rounding step; fixed."})
			continue
		case i >= 12 && i%4 == 1:
			cmd = fmt.Sprintf("sed -n 1,40p lib/helper_%s_%02d.py", id, i-12)
		default:
			cmd = fmt.Sprintf("cat src/module_%02d.py", i)
		}
		var out strings.Builder
		fmt.Fprintf(&out, "# module %02d of %s\n", i, id)
		if i%4 == 1 {
			fmt.Fprintf(&out, "# total() moved to lib/helper_%s_%02d.py\n", id, i)
		}
		for l := 0; l < lines; l++ {
			fmt.Fprintf(&out, "    value_%d_%d = compute(row[%d], weight=%d)  # step %d\n", i, l, l, (i*31+l*7)%97, i)
		}
		args, _ := json.Marshal(map[string]string{"command": cmd})
		t.Steps = append(t.Steps, trajectory.Step{Text: fmt.Sprintf("Step %d: looking further.", i),
			Calls: []trajectory.Call{{Name: "bash", Arguments: args}}, Results: []string{out.String()}})
	}
	return t
}

// storeDir writes runs as a store's directory holds them.
func storeDir(t *testing.T, runs ...*trajectory.Trajectory) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range runs {
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, r.ID+trajectory.Ext), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func policy(c Case, name string) PolicyResult {
	for _, p := range c.Policies {
		if p.Name == name {
			return p
		}
	}
	return PolicyResult{}
}

// TestBenchOnSyntheticRuns runs the whole bench on runs of ours at windows
// scaled to them and checks what must hold whatever the gateway decides.
func TestBenchOnSyntheticRuns(t *testing.T) {
	a, b := synthetic("alpha", 26, 14), synthetic("beta", 20, 14)
	// beta is replayed only inside the session, which keeps the test short.
	opts := Options{Trajectories: trajectory.Options{Dir: storeDir(t, a, b)}, Runs: []string{"alpha"}, Windows: []int{40000, 8000},
		SessionParts: []string{"alpha", "beta"}, SessionWindow: 8000}
	first, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(first.Cases), 2+1; got != want {
		t.Fatalf("got %d cases, want %d (alpha at two windows, and the session)", got, want)
	}
	for _, c := range first.Cases {
		if c.Facts == 0 {
			t.Errorf("%s: no later-needed facts; the synthetic runs plant some", c.Trajectory)
		}
		for _, p := range c.Policies {
			if n := p.FactsInView + p.FactsRecovered + p.FactsLost; n != c.Facts {
				t.Errorf("%s at %d, %s: facts in view %d + recovered %d + lost %d = %d, want the run's %d",
					c.Trajectory, c.Window, p.Name, p.FactsInView, p.FactsRecovered, p.FactsLost, n, c.Facts)
			}
			if len(p.TurnCostUSD) != c.Steps {
				t.Errorf("%s at %d, %s: %d turn costs for %d steps", c.Trajectory, c.Window, p.Name, len(p.TurnCostUSD), c.Steps)
			}
		}
		s := policy(c, Straight)
		if over := s.Peak > c.Window; over != (s.OverWindow > 0) {
			t.Errorf("%s at %d: straight peaks at %d with %d requests flagged over the window", c.Trajectory, c.Window, s.Peak, s.OverWindow)
		}
		g := policy(c, Gateway)
		if g.OffScript != 0 {
			t.Errorf("%s at %d: the scripted model lost its place %d times", c.Trajectory, c.Window, g.OffScript)
		}
		if g.Requests != c.Steps+g.HiddenRounds {
			t.Errorf("%s at %d: gateway made %d requests for %d steps and %d hidden rounds", c.Trajectory, c.Window, g.Requests, c.Steps, g.HiddenRounds)
		}
		if c.Window == 8000 && s.Peak > c.Window && g.CompressCalls == 0 {
			t.Errorf("%s at 8K: straight peaks at %d and the model made no Compress call; want the nudges obeyed", c.Trajectory, s.Peak)
		}
	}
	alpha8 := first.Cases[1]
	if s := policy(alpha8, Straight); alpha8.Window != 8000 || s.OverWindow == 0 {
		t.Errorf("alpha at %d: straight has %d requests over the window, want them flagged", alpha8.Window, s.OverWindow)
	}
	if !strings.Contains(Chart(alpha8), "requests over the window)") {
		t.Errorf("the chart of alpha at 8K does not flag straight as over the window")
	}

	second, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := first.JSON()
	j2, _ := second.JSON()
	if !bytes.Equal(j1, j2) || first.Markdown() != second.Markdown() || first.SVG() != second.SVG() {
		t.Errorf("two runs of the same options differ")
	}
}

// TestStraightCostByHand prices a three-step run whose tokens are its
// bytes (Options.Count), by the cache model: request k reads request
// k-1's whole prompt and writes the rest, so over the run the cache
// writes the last request (T2) and reads T0+T1; output is each turn's.
func TestStraightCostByHand(t *testing.T) {
	run := &trajectory.Trajectory{ID: "tiny", Agent: "hand", Model: "m", Task: "tiny",
		System: "SYS", TaskMessage: "TASK",
		Tools: []trajectory.Tool{{Name: "sh", Description: "D", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Steps: []trajectory.Step{
			{Calls: []trajectory.Call{{Name: "sh", Arguments: json.RawMessage(`{"c":"ls"}`)}}, Results: []string{"a.txt"}},
			{Text: "ok", Calls: []trajectory.Call{{Name: "sh", Arguments: json.RawMessage(`{"c":"cat a.txt"}`)}}, Results: []string{"hello"}},
			{Text: "done"},
		}}
	rep, err := Run(context.Background(), Options{Trajectories: trajectory.Options{Dir: storeDir(t, run)}, Windows: []int{8000}, NoSession: true,
		Count: func(s string) int { return len(s) }})
	if err != nil {
		t.Fatal(err)
	}
	// T0 = tool (2+1+17) + system 3 + task 4 = 27
	// T1 = T0 + call "sh"+`{"c":"ls"}` (2+10) + result 5 = 44
	// T2 = T1 + text 2 + call "sh"+`{"c":"cat a.txt"}` (2+17) + result 5 = 70
	// output: 2+10, 2+2+17, 4 = 37
	const t0, t1, t2, out = 27, 44, 70, 37
	want := (3.75*t2 + 0.30*(t0+t1) + 15*out) / 1e6
	s := policy(rep.Cases[0], Straight)
	if math.Abs(s.CostUSD-want) > 5e-7 || // CostUSD is rounded to micro-dollars
		s.InputTokens != t0+t1+t2 || s.CacheRead != t0+t1 || s.CacheWrite != t2 || s.Output != out {
		t.Errorf("straight: got %.9f USD, input %d (read %d, written %d), output %d; want %.9f USD, input %d (read %d, written %d), output %d",
			s.CostUSD, s.InputTokens, s.CacheRead, s.CacheWrite, s.Output, want, t0+t1+t2, t0+t1, t2, out)
	}
}

func TestNoRunsSaysWhereItLooked(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), Options{Trajectories: trajectory.Options{Dir: dir}})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), trajectory.DirEnv) {
		t.Errorf("got %v, want an error naming %s and $%s", err, dir, trajectory.DirEnv)
	}
}
