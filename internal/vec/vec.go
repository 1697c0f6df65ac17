// Package vec holds the vector arithmetic shared by query expansion
// (internal/expand) and dense retrieval (internal/embed). It is pure: no I/O,
// no state.
package vec

// Dot is the inner product of two vectors; a and b must have the same length
// (b is resliced to a's). For unit vectors it is their cosine similarity. It
// keeps four running sums so the additions do not wait on each other (about
// twice as fast as one), and their order is fixed, so the result is the same
// on every call.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
