package arms

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestDeterminism encodes corpus_v2 twice with every pure arm, and once more
// with every schema's keys shuffled and re-spaced, and requires identical
// bytes each time.
func TestDeterminism(t *testing.T) {
	tools := loadCorpus(t)
	rng := rand.New(rand.NewPCG(1, 2))
	shuffledTools := make([]config.Tool, len(tools))
	changed := 0
	for i, tool := range tools {
		shuffledTools[i] = tool
		shuffledTools[i].Schema = shuffled(t, tool.Schema, rng)
		if string(shuffledTools[i].Schema) != string(tool.Schema) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("the shuffle changed no schema; the test would prove nothing")
	}
	for _, a := range pureArms() {
		t.Run(a.Name(), func(t *testing.T) {
			first := render(t, a, tools)
			second := render(t, a, tools)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("second encoding differs from the first (-first +second):\n%s", diff)
			}
			third := render(t, a, shuffledTools)
			if diff := cmp.Diff(first, third); diff != "" {
				t.Errorf("encoding of key-shuffled schemas differs (-original +shuffled):\n%s", diff)
			}
		})
	}
}

// rendering is everything an arm produces for a corpus.
type rendering struct {
	Tools    []string
	Listing  string
	Metadata []config.ToolMetadata
}

func render(t *testing.T, a Arm, tools []config.Tool) rendering {
	t.Helper()
	var r rendering
	for _, tool := range tools {
		s, err := a.EncodeTool(tool)
		if err != nil {
			t.Fatalf("EncodeTool(%s): %v", tool.ID, err)
		}
		md, err := a.EncodeIndexMetadata(tool)
		if err != nil {
			t.Fatalf("EncodeIndexMetadata(%s): %v", tool.ID, err)
		}
		r.Tools = append(r.Tools, s)
		r.Metadata = append(r.Metadata, md)
	}
	var err error
	if r.Listing, err = a.EncodeListing(tools); err != nil {
		t.Fatalf("EncodeListing: %v", err)
	}
	return r
}

// TestInputsUntouched checks that encoding does not modify the caller's
// tools.
func TestInputsUntouched(t *testing.T) {
	tools := loadCorpus(t)
	before := make([]string, len(tools))
	for i, tool := range tools {
		before[i] = string(tool.Schema)
	}
	for _, a := range pureArms() {
		render(t, a, tools)
	}
	for i, tool := range tools {
		if string(tool.Schema) != before[i] {
			t.Errorf("schema of %s changed while encoding", tool.ID)
		}
	}
}
