package tokens_test

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/tokens"
)

func ExampleCounter_Count() {
	c, err := tokens.New("cl100k_base")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(c.Name(), c.Count("hello world"), c.Count("<|endoftext|>"))
	// Output:
	// cl100k_base 2 7
}
