package arms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	for _, a := range []Arm{NewTron(), NewBaseline(), NewCompact()} {
		if err := r.Register(a); err != nil {
			t.Fatalf("Register(%s): %v", a.Name(), err)
		}
	}
	if diff := cmp.Diff([]string{BaselineName, CompactName, TronName}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if err := r.Register(NewCompact()); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate Register: got %v, want an 'already registered' error", err)
	}
	for _, bad := range []string{"", "Compact", "compact-sig", "compact sig", "_x", "x_", "a__b", "9x"} {
		if err := r.Register(named{NewCompact(), bad}); err == nil {
			t.Errorf("Register(%q): got nil, want a name error", bad)
		}
	}
	if err := r.Register(nil); err == nil {
		t.Error("Register(nil): got nil, want an error")
	}
	a, err := r.Resolve(CompactName)
	if err != nil || a.Name() != CompactName {
		t.Errorf("Resolve(%s) = %v, %v", CompactName, a, err)
	}
	if _, err := r.Resolve("nope"); err == nil || !strings.Contains(err.Error(), "unknown arm") {
		t.Errorf("Resolve(nope): got %v, want an unknown-arm error", err)
	}
}

// TestResolveChecksAvailabilityFirst: an arm whose runtime is missing fails
// at Resolve, with ErrArmUnavailable and the reason, and is never run.
func TestResolveChecksAvailabilityFirst(t *testing.T) {
	r := NewRegistry()
	runner := &countingRunner{err: fmt.Errorf("tscg: node is missing: %w", ErrArmUnavailable)}
	if err := r.Register(NewTSCG(runner)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Resolve(TSCGName)
	if !errors.Is(err, ErrArmUnavailable) || !strings.Contains(err.Error(), "node is missing") {
		t.Errorf("Resolve: got %v, want ErrArmUnavailable naming the reason", err)
	}
	if runner.runs != 0 {
		t.Errorf("runner ran %d times during Resolve, want 0", runner.runs)
	}
}

func TestZeroRegistry(t *testing.T) {
	var r Registry
	if err := r.Register(NewBaseline()); err != nil {
		t.Fatalf("Register on a zero Registry: %v", err)
	}
	if diff := cmp.Diff([]string{BaselineName}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestResolveUnregisteredTSCG(t *testing.T) {
	_, err := NewRegistry().Resolve(TSCGName)
	if !errors.Is(err, ErrArmUnavailable) || !strings.Contains(err.Error(), "armsio.NewTSCG") {
		t.Errorf("got %v, want ErrArmUnavailable saying how to register the arm", err)
	}
	_, err = NewTSCG(nil).EncodeTool(config.Tool{ID: "s:t", Server: "s", Name: "t"})
	if !errors.Is(err, ErrArmUnavailable) {
		t.Errorf("EncodeTool with no runner: got %v, want ErrArmUnavailable", err)
	}
}

func TestDefaultRegistry(t *testing.T) {
	want := []string{BaselineName, BriefName, CompactName, ToonListingName, TronName}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	for _, name := range want {
		a, err := Resolve(name)
		if err != nil || a.Name() != name {
			t.Errorf("Resolve(%s) = %v, %v", name, a, err)
		}
	}
	if err := Register(NewCompact()); err == nil {
		t.Error("registering compact_sig twice in the default registry succeeded")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate did not panic")
		}
	}()
	MustRegister(NewBaseline())
}

func TestDeclarations(t *testing.T) {
	tests := []struct {
		arm                       Arm
		indexAltering, lowerBound bool
	}{
		{NewBaseline(), false, false},
		{NewCompact(), true, false},
		{NewBrief(), false, true},
		{NewToonListing(), true, false},
		{NewTron(), true, false},
		{NewTSCG(nil), true, true},
	}
	for _, tc := range tests {
		if got := tc.arm.IndexAltering(); got != tc.indexAltering {
			t.Errorf("%s.IndexAltering() = %v, want %v", tc.arm.Name(), got, tc.indexAltering)
		}
		if got := tc.arm.LowerBound(); got != tc.lowerBound {
			t.Errorf("%s.LowerBound() = %v, want %v", tc.arm.Name(), got, tc.lowerBound)
		}
	}
}

type named struct {
	Arm
	name string
}

func (n named) Name() string { return n.name }

type countingRunner struct {
	err  error
	runs int
}

func (c *countingRunner) Available() error { return c.err }

func (c *countingRunner) Run(context.Context, []byte) ([]byte, error) {
	c.runs++
	return nil, c.err
}
