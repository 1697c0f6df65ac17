package gatewaytest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A scenario is a long, tool-heavy agent conversation for replaying
// through the gateway: a user who asks for files to be read (one
// read_file call per file, each result large), with facts planted in the
// early files and asked for again much later. Agent plays the model of it;
// Replay plays the user and the tools.
//
// The texts below are the protocol between the two: the Agent recognises a
// step by its opening words and a fact by its shape.
const (
	// taskOpening starts a reading step: "Read these files ...: /a, /b."
	taskOpening = "Read these files and tell me in one line what each holds: "
	// questionOpening starts a question about a planted fact.
	questionOpening = "What is the value of "
)

// ScenarioOptions shape a scenario. Zero fields take the defaults noted.
type ScenarioOptions struct {
	// Tasks is the number of reading steps (default 60); FilesPerTask the
	// files each reads (default 4).
	Tasks        int
	FilesPerTask int
	// MinFileBytes and MaxFileBytes bound a file's size (defaults 8000 and
	// 40000 bytes, about 2K to 10K tokens).
	MinFileBytes, MaxFileBytes int
	// Facts are planted one per file in the first files read (default 12);
	// Questions ask for them again, spread over the last third of the
	// steps (default: every fact once).
	Facts     int
	Questions int
	// Seed makes the texts; the same options give the same scenario.
	Seed uint64
}

func (o *ScenarioOptions) defaults() {
	if o.Tasks <= 0 {
		o.Tasks = 60
	}
	if o.FilesPerTask <= 0 {
		o.FilesPerTask = 4
	}
	if o.MinFileBytes <= 0 {
		o.MinFileBytes = 8000
	}
	if o.MaxFileBytes < o.MinFileBytes {
		o.MaxFileBytes = max(40000, o.MinFileBytes)
	}
	if o.Facts <= 0 {
		o.Facts = 12
	}
	o.Facts = min(o.Facts, o.Tasks*o.FilesPerTask)
	if o.Questions <= 0 {
		o.Questions = o.Facts
	}
}

// Scenario is the user's side of a replay: the steps, in order, and the
// files the read_file tool serves.
type Scenario struct {
	Steps []Step
	files map[string]string
}

// Step is one message of the user's.
type Step struct {
	Text string
	// Fact is the key a question asks for and Want the "KEY = value" its
	// answer must contain; both empty for a reading step.
	Fact, Want string
	// Files are the paths a reading step asks for.
	Files []string
}

// Question reports whether the step asks for a planted fact.
func (s Step) Question() bool { return s.Fact != "" }

// File returns the content read_file serves for path.
func (sc *Scenario) File(path string) (string, bool) {
	f, ok := sc.files[path]
	return f, ok
}

// FactLine is how a planted fact reads in a file: "FACT-007 = amber-4821".
func FactLine(key, value string) string { return key + " = " + value }

var (
	words    = strings.Fields("alpha amber basalt cedar delta ember fjord garnet harbor indigo juniper kestrel lumen meadow nickel onyx pepper quartz raven sierra tundra umber violet willow xenon yarrow zephyr")
	services = strings.Fields("auth billing catalog gateway indexer ledger mailer notifier orders payments search storage")
	events   = strings.Fields("request.ok request.slow cache.miss cache.hit retry.scheduled queue.drained lock.acquired lock.released job.done job.failed")
)

// NewScenario builds the scenario opts describe, deterministically.
func NewScenario(opts ScenarioOptions) *Scenario {
	opts.defaults()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	sc := &Scenario{files: map[string]string{}}
	facts := make([]Step, 0, opts.Facts)
	n := 0
	var tasks []Step
	for t := 0; t < opts.Tasks; t++ {
		var paths []string
		for f := 0; f < opts.FilesPerTask; f++ {
			n++
			path := fmt.Sprintf("/srv/logs/%s-%03d.log", services[n%len(services)], n)
			size := opts.MinFileBytes + rng.IntN(opts.MaxFileBytes-opts.MinFileBytes+1)
			fact := ""
			if len(facts) < opts.Facts {
				key := fmt.Sprintf("FACT-%03d", len(facts)+1)
				value := fmt.Sprintf("%s-%04d", words[rng.IntN(len(words))], rng.IntN(10000))
				fact = FactLine(key, value)
				facts = append(facts, Step{Fact: key, Want: fact,
					Text: questionOpening + key + "? It was in one of the log files you read earlier; answer as " + key + " = <value>."})
			}
			sc.files[path] = logFile(rng, path, size, fact)
			paths = append(paths, path)
		}
		tasks = append(tasks, Step{Text: taskOpening + strings.Join(paths, ", ") + ".", Files: paths})
	}
	// Questions go after steps spread over the last third, each fact asked
	// once before any is asked twice.
	first := opts.Tasks - opts.Tasks/3
	at := map[int][]Step{}
	for q := 0; q < opts.Questions; q++ {
		after := first + q*(opts.Tasks-first)/opts.Questions
		at[after] = append(at[after], facts[q%len(facts)])
	}
	for i, t := range tasks {
		sc.Steps = append(sc.Steps, t)
		sc.Steps = append(sc.Steps, at[i]...)
	}
	return sc
}

// logFile is a log of about size bytes with fact, when set, on a line in
// its middle.
func logFile(rng *rand.Rand, path string, size int, fact string) string {
	var b strings.Builder
	b.WriteString("# " + path + "\n")
	planted := fact == ""
	for line := 1; b.Len() < size; line++ {
		if !planted && b.Len() >= size/2 {
			b.WriteString(fact + "\n")
			planted = true
		}
		fmt.Fprintf(&b, "%05d 2025-03-%02dT%02d:%02d:%02dZ %-9s %-16s shard=%d items=%d took=%dms tag=%s\n",
			line, 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60),
			services[rng.IntN(len(services))], events[rng.IntN(len(events))],
			rng.IntN(16), rng.IntN(5000), rng.IntN(900), words[rng.IntN(len(words))])
	}
	return b.String()
}
