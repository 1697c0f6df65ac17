package vec

import (
	"math"
	"testing"
)

func TestDot(t *testing.T) {
	cases := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"empty", nil, nil, 0},
		{"shorter than the unrolled step", []float32{1, 2, 3}, []float32{4, 5, 6}, 32},
		{"exactly one step", []float32{1, 0, 0, 1}, []float32{1, 1, 1, 1}, 2},
		{"steps and a tail", []float32{1, 1, 1, 1, 1, 1}, []float32{1, 2, 3, 4, 5, 6}, 21},
		{"orthogonal unit vectors", []float32{1, 0}, []float32{0, 1}, 0},
		{"b longer than a uses a's length", []float32{2, 3}, []float32{5, 7, 100}, 31},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Dot(tc.a, tc.b); math.Abs(float64(got-tc.want)) > 1e-6 {
				t.Errorf("Dot(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
