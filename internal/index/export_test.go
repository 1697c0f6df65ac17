package index

// Test helpers for the external test package (index_test), which can import
// packages that import this one (internal/expand).
var (
	LiveMCPToolsForTest = liveMCPTools
	SynthesizeForTest   = synthesize
	LoadForTest         = load
	BenchQueriesForTest = benchQueries
	RunSearchesForTest  = runSearches
)

// WaitExpanderForTest waits until the background build of the expansion
// function, if one runs, is over.
func WaitExpanderForTest(ix *Index) { ix.expWG.Wait() }
