package expand

import (
	"fmt"
	"testing"
)

func TestScratchNeighbors(t *testing.T) {
	v := vectors(t)
	vocab := []string{"directori", "file", "weather", "price", "stock", "hotel", "currenc", "forecast", "temperatur", "email", "messag", "password", "calendar", "event", "repositori", "delet", "remov", "search", "translat"}
	e := New(v, vocab, Options{MinSimilarity: 0.3, Neighbors: 3})
	for _, q := range []string{"folder", "share", "inbox", "rain", "erase", "meet", "appoint", "lodg", "hunt", "seek"} {
		fmt.Println(q, v.Rank(q), e.Expand([]string{q}, nil))
	}
}
