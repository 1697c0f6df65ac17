package expand_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/expand"
)

// A query word the tools never use ("folder") reaches the index's own
// words through the embeddings, weighted below the literal words.
func Example() {
	// Three made-up 2-d word vectors in the source layout (component,
	// component, norm, frequency rank).
	src := `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {
		"directory": [0.9, 0.1, 1, 1000],
		"folder":    [0.8, 0.3, 1, 2000],
		"weather":   [0.1, 0.9, 1, 3000]}}`
	var file bytes.Buffer
	if _, err := expand.Convert(strings.NewReader(src), &file, expand.ConvertOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	v, err := expand.Parse(file.Bytes())
	if err != nil {
		fmt.Println(err)
		return
	}
	// The index holds "directori" and "weather" (stems, as it analyzes
	// text); the query's analyzed words are "creat" and "folder".
	e := expand.New(v, []string{"creat", "directori", "weather"}, expand.Options{})
	for _, w := range e.Expand([]string{"creat", "folder"}, nil) {
		fmt.Printf("%s (for %s) %.2f\n", w.Term, w.From, w.Weight)
	}
	// Output:
	// directori (for folder) 0.95
}
