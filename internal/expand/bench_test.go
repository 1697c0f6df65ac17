package expand

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BenchmarkLoad reads the converted file (DefaultMaxWords) with Load, and,
// as the baseline measured in the same run, with a bare os.ReadFile: the
// difference is the checksum and validation.
func BenchmarkLoad(b *testing.B) {
	path := convertedPath(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("readfile", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := os.ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := Load(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchVocab returns the LiveMCPTool index vocabulary (527 tools) or one
// scaled to 10,000 tools. Vocabulary grows sublinearly with the number of
// documents (Heaps' law, about n^0.6 for English text), so 10,000 tools
// hold roughly 19^0.6 ≈ 6 times the terms of 527; the extra terms are
// English words from the embeddings, each with a vector: the worst case for
// a brute-force scan, which only visits terms with vectors.
func benchVocab(b testing.TB, v *Vectors, tools int) []string {
	ix, _ := productionIndex(b, liveMCPTools(b))
	vocab := ix.Vocabulary()
	if tools == 527 {
		return vocab
	}
	want := 6 * len(vocab)
	have := map[string]bool{}
	for _, t := range vocab {
		have[t] = true
	}
	for i := 0; len(vocab) < want && i < v.Len(); i++ {
		if t := v.Term(i); !have[t] && v.Rank(t) >= DefaultMinRank {
			vocab = append(vocab, t)
		}
	}
	slices.Sort(vocab) // as index.Vocabulary returns it
	return vocab
}

// BenchmarkExpand measures expansion alone (New once, Expand per query)
// and a whole production search with and without it, at 527 and 10,000
// tools' vocabularies. The plain search is the baseline: report
// expand/search and search+expand/search. "expand" repeats the query
// set, so after its first pass every word is in the Expander's neighbor
// cache; "expand-cold" gives each query a fresh Expander.
func BenchmarkExpand(b *testing.B) {
	v := vectors(b)
	queries := loadQueries(b, "livemcptool.queries.json")
	for _, tools := range []int{527, 10000} {
		vocab := benchVocab(b, v, tools)
		b.Run(fmt.Sprintf("tools=%d/new", tools), func(b *testing.B) {
			for b.Loop() {
				New(v, vocab, Options{})
			}
		})
		e := New(v, vocab, Options{})
		known := map[string]bool{}
		for _, t := range vocab {
			known[t] = true
		}
		// Each query's terms as the index analyzes them.
		a, err := wordAnalyzer()
		if err != nil {
			b.Fatal(err)
		}
		var terms [][]string
		for _, q := range queries {
			var ts []string
			for _, tok := range a.Analyze([]byte(q.Query)) {
				ts = append(ts, string(tok.Term))
			}
			terms = append(terms, ts)
		}
		b.Run(fmt.Sprintf("tools=%d/expand", tools), func(b *testing.B) {
			b.ReportMetric(float64(e.Len()), "terms")
			i := 0
			for b.Loop() {
				e.Expand(terms[i%len(terms)], func(s string) bool { return known[s] })
				i++
			}
		})
		// The full pass Expand made before it cached neighbors
		// (referenceExpand, cache_test.go): the baseline of the two above.
		b.Run(fmt.Sprintf("tools=%d/expand-reference", tools), func(b *testing.B) {
			i := 0
			for b.Loop() {
				referenceExpand(e, terms[i%len(terms)], func(s string) bool { return known[s] })
				i++
			}
		})
		// The same queries on an emptied neighbor cache: every word misses
		// it, as on the first searches after a vocabulary change.
		b.Run(fmt.Sprintf("tools=%d/expand-cold", tools), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				clear(e.cache)
				b.StartTimer()
				e.Expand(terms[i%len(terms)], func(s string) bool { return known[s] })
			}
		})
	}
	// Whole searches on the 527-tool production index.
	ix, sw := productionIndex(b, liveMCPTools(b))
	vocab := ix.Vocabulary()
	for _, mode := range []string{"search", "search+expand"} {
		b.Run("tools=527/"+mode, func(b *testing.B) {
			if mode == "search+expand" {
				sw.set(New(v, vocab, Options{}))
				defer sw.set(nil)
			}
			i := 0
			for b.Loop() {
				if _, err := ix.Search(context.Background(), queries[i%len(queries)].Query, 10); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkConvert converts the installed npm package (about 300 MB of
// JSON) as `mcproxy embeddings build` does, from memory.
//
//	go test -run '^$' -bench Convert -benchtime 1x ./internal/expand
func BenchmarkConvert(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(sourceDir(b), SourceFile))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Convert(bytes.NewReader(data), io.Discard, ConvertOptions{MaxWords: DefaultMaxWords}); err != nil {
			b.Fatal(err)
		}
	}
}
