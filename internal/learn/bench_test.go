package learn_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/learn"
)

// word is a made-up word unique to i (letters only, so it is neither a
// number nor a name), which a lesson teaches.
func word(i int) string {
	b := []byte("zq")
	for ; i > 0 || len(b) < 5; i /= 26 {
		b = append(b, byte('a'+i%26))
	}
	return string(b)
}

// BenchmarkLesson measures what a teaching call costs its caller: the
// lesson stored (an atomic write of the store) and its server re-indexed
// (100 tools) on the caller's path (sync, Called, as before), against
// handing it to the Learner's worker (later, CalledLater, what the MCP
// front does). Each iteration teaches a new word; the later lessons are
// waited for outside the timer.
func BenchmarkLesson(b *testing.B) {
	for _, mode := range []string{"sync", "later"} {
		b.Run(mode, func(b *testing.B) {
			st, err := learn.Open(learn.Options{Path: filepath.Join(b.TempDir(), "learned.json")})
			if err != nil {
				b.Fatal(err)
			}
			ix, err := index.New(index.Options{Learned: st.Terms})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			tools := make([]config.ToolMetadata, 100)
			for i := range tools {
				tools[i] = tool("big", fmt.Sprintf("tool_%d", i), fmt.Sprintf("Handles records of kind %s in the archive.", word(1000+i)))
			}
			if err := ix.Upsert("big", tools); err != nil {
				b.Fatal(err)
			}
			l := &learn.Learner{Store: st, Index: ix}
			defer l.Close()
			const want = "big:tool_7"
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := fmt.Sprint("s", i)
				l.Searched(s, "find the "+word(i)+" entries", []string{"big:tool_1"})
				l.Searched(s, "records of kind "+word(1007)+" in the archive", []string{want})
				b.StartTimer()
				if mode == "sync" {
					if l.Called(s, want, true) == nil {
						b.Fatal("the call taught nothing")
					}
				} else {
					l.CalledLater(s, want, true)
				}
				b.StopTimer()
				l.Refresh() // the later lesson done before the next one
				b.StartTimer()
			}
		})
	}
}
