// Package fuzzy measures how far apart two strings are, for "did you mean"
// suggestions on misspelled config keys and tool ids. It is a leaf: it
// imports nothing, so even internal/config can use it.
package fuzzy

// Distance is the Levenshtein edit distance between a and b: the fewest
// single-byte insertions, deletions and substitutions that turn a into b.
// It counts bytes, not runes; the keys and ids it compares are ASCII in
// practice, and a multi-byte rune only makes a distance larger. Callers fold
// case themselves when case should not count.
func Distance(a, b string) int {
	if a == b {
		return 0
	}
	// Two rows of the dynamic-programming table are enough: row i holds the
	// distances from a[:i] to every prefix of b.
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
