//go:build race

package expand

// raceEnabled says the race detector is on: it makes the arithmetic of the
// exhaustive equivalence tests some twenty times slower, so they check a
// sample there (the full runs are the ones without -race).
const raceEnabled = true
