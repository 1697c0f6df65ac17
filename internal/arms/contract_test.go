package arms

import (
	"fmt"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// checkIndexAltering verifies an arm's IndexAltering declaration against its
// metadata on tools: an arm that says false must give the baseline mapping
// for every tool; one that says true must differ for at least one.
func checkIndexAltering(a Arm, tools []config.Tool) error {
	differs := 0
	for _, tool := range tools {
		got, err := a.EncodeIndexMetadata(tool)
		if err != nil {
			return fmt.Errorf("EncodeIndexMetadata(%s): %w", tool.ID, err)
		}
		want, err := BaselineMetadata(tool)
		if err != nil {
			return fmt.Errorf("BaselineMetadata(%s): %w", tool.ID, err)
		}
		if got != want {
			if !a.IndexAltering() {
				return fmt.Errorf("%s declares IndexAltering false but its metadata for %s differs from the baseline:\ngot  %+v\nwant %+v", a.Name(), tool.ID, got, want)
			}
			differs++
		}
	}
	if a.IndexAltering() && differs == 0 {
		return fmt.Errorf("%s declares IndexAltering true but its metadata equals the baseline for all %d tools", a.Name(), len(tools))
	}
	return nil
}

// TestIndexAlteringContract checks every arm's declaration on corpus_v2.
func TestIndexAlteringContract(t *testing.T) {
	tools := loadCorpus(t)
	arms := append(pureArms(), NewTSCG(&recordingRunner{}))
	for _, a := range arms {
		t.Run(a.Name(), func(t *testing.T) {
			if err := checkIndexAltering(a, tools); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestIndexAlteringContractCatchesLies shows the check fails both ways: an
// arm misdeclaring in either direction is caught.
func TestIndexAlteringContractCatchesLies(t *testing.T) {
	tools := loadCorpus(t)
	for _, a := range []Arm{
		liar{Arm: NewCompact(), altering: false},
		liar{Arm: NewBaseline(), altering: true},
	} {
		if err := checkIndexAltering(a, tools); err == nil {
			t.Errorf("%s declaring IndexAltering %v passed the contract check", a.Name(), a.IndexAltering())
		}
	}
}

// liar is an arm with a wrong IndexAltering declaration.
type liar struct {
	Arm
	altering bool
}

func (l liar) IndexAltering() bool { return l.altering }
