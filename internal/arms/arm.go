package arms

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Registry names of the arms.
const (
	// BaselineName is the full canonical JSON rendering every savings figure
	// is measured against.
	BaselineName = "baseline_json"
	// CompactName is the one-line signature arm, the default before brief_sig.
	CompactName = "compact_sig"
	// ToonListingName renders tool listings as TOON.
	ToonListingName = "toon_listing"
	// ToonResultsName is the report key of the TOON measurement of tool-call
	// results (RunToonResults); it is not a tool-listing arm and is not in
	// the registry.
	ToonResultsName = "toon_results"
	// TronName is the arm that shares identical schemas through named classes.
	TronName = "tron_dedup"
	// TSCGName is the arm that runs the TSCG compiler through a Node shim.
	TSCGName = "tscg"
)

// ListingSeparator joins per-tool encodings in the listings of arms that have
// no shared preamble, so a listing costs exactly its tools plus the
// separators.
const ListingSeparator = "\n\n"

// ErrArmUnavailable is wrapped, with a reason a person can act on, by the
// error of an arm whose external runtime is missing (for example TSCG without
// node or without @tscg/core). Registry.Resolve reports it before any tool is
// encoded, so a caller can record one skipped arm instead of a failure per
// tool.
var ErrArmUnavailable = errors.New("arm runtime unavailable")

// Arm is one deterministic rendering of tool definitions.
type Arm interface {
	// Name is the arm's registry key: lowercase snake_case, stable across
	// releases.
	Name() string

	// IndexAltering reports whether EncodeIndexMetadata differs from the
	// baseline mapping for some tool. When true, the arm's retrieval quality
	// must be measured, because the index sees different text.
	IndexAltering() bool

	// LowerBound reports whether the arm shortens or rewrites descriptions;
	// its savings are then only a lower bound on the cost of the same
	// information.
	LowerBound() bool

	// EncodeTool renders one tool. The same tool always gives the same
	// bytes; a tool the arm cannot render gives an error.
	EncodeTool(t config.Tool) (string, error)

	// EncodeListing renders a whole listing, in the order given. A shared
	// preamble (a TOON array header, TRON classes) is paid once here, never
	// per tool. Any unencodable tool fails the whole listing; callers that
	// want per-tool skips encode tool by tool first.
	EncodeListing(ts []config.Tool) (string, error)

	// EncodeIndexMetadata is the exact metadata the search index ingests for
	// the tool under this arm. Arms that only change rendering return the
	// baseline mapping (see BaselineMetadata).
	EncodeIndexMetadata(t config.Tool) (config.ToolMetadata, error)
}

// AvailabilityChecker is implemented by arms that depend on something outside
// the process. Available returns nil when the arm can run, else an error
// wrapping ErrArmUnavailable that says what is missing.
type AvailabilityChecker interface {
	Available() error
}

// armName is the shape of a registry key.
var armName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Registry maps arm names to arms. It is safe for concurrent use; the zero
// value is an empty registry.
type Registry struct {
	mu   sync.RWMutex
	arms map[string]Arm
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{arms: make(map[string]Arm)}
}

// Register adds a. It rejects a nil arm, a name that is not lowercase
// snake_case and a name already registered.
func (r *Registry) Register(a Arm) error {
	if a == nil {
		return errors.New("registering arm: arm is nil")
	}
	name := a.Name()
	if !armName.MatchString(name) {
		return fmt.Errorf("registering arm %q: name must be lowercase snake_case", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.arms[name]; dup {
		return fmt.Errorf("registering arm %q: already registered", name)
	}
	if r.arms == nil {
		r.arms = make(map[string]Arm)
	}
	r.arms[name] = a
	return nil
}

// Resolve returns the arm registered as name. An arm that implements
// AvailabilityChecker is checked first, and its error returned (wrapped) when
// its runtime is missing. Asking for TSCGName when no TSCG arm was registered
// also reports ErrArmUnavailable, since the pure registry cannot run Node by
// itself (armsio.NewTSCG builds the runnable arm).
func (r *Registry) Resolve(name string) (Arm, error) {
	r.mu.RLock()
	a, ok := r.arms[name]
	r.mu.RUnlock()
	if !ok {
		if name == TSCGName {
			return nil, fmt.Errorf("resolving arm %q: tscg: no Node runner registered (register armsio.NewTSCG()): %w", name, ErrArmUnavailable)
		}
		return nil, fmt.Errorf("resolving arm %q: unknown arm (known: %v)", name, r.Names())
	}
	if c, ok := a.(AvailabilityChecker); ok {
		if err := c.Available(); err != nil {
			return nil, fmt.Errorf("resolving arm %q: %w", name, err)
		}
	}
	return a, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.arms))
	for n := range r.arms {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// defaultRegistry holds the arms that need nothing outside the process:
// baseline_json, compact_sig, brief_sig, toon_listing and tron_dedup. The TSCG arm needs
// Node, so its runnable form is added by the host (Register(armsio.NewTSCG())).
var defaultRegistry = func() *Registry {
	r := NewRegistry()
	for _, a := range []Arm{NewBaseline(), NewCompact(), NewBrief(), NewToonListing(), NewTron()} {
		if err := r.Register(a); err != nil {
			panic(err) // a duplicate built-in name is a bug in this file
		}
	}
	return r
}()

// Register adds a to the package default registry.
func Register(a Arm) error { return defaultRegistry.Register(a) }

// MustRegister is Register for use at program start: a bad or duplicate name
// is a programming error, so it panics.
func MustRegister(a Arm) {
	if err := Register(a); err != nil {
		panic(err)
	}
}

// Resolve resolves name in the package default registry.
func Resolve(name string) (Arm, error) { return defaultRegistry.Resolve(name) }

// Names lists the package default registry's arms, sorted.
func Names() []string { return defaultRegistry.Names() }
