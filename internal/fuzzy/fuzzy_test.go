package fuzzy

import (
	"fmt"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"same", "same", 0},
		{"kitten", "sitting", 3},
		{"read", "raed", 2}, // a transposition is two edits
		{"flaw", "lawn", 2},
		{"timeout", "timeouts", 1},
		{"init_timeout", "initTimeout", 2},
		{"Enabled", "enabled", 1}, // case counts
		{"é", "e", 2},             // bytes, not runes
		{"filesystem:read_file", "filesystem:read_text_file", 5},
	}
	for _, tc := range tests {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q): got %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q): got %d, want %d (it must be symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func ExampleDistance() {
	fmt.Println(Distance("alowed_tools", "allowed_tools"))
	fmt.Println(Distance("github:create_isue", "github:create_issue"))
	// Output:
	// 1
	// 1
}
