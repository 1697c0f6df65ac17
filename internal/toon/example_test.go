package toon_test

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/toon"
)

// A listing of uniform objects becomes a table: the field names are written
// once, then one row per object.
func ExampleEncode() {
	tools := []any{
		toon.Object{{Key: "name", Value: "read_file"}, {Key: "server", Value: "fs"}, {Key: "args", Value: 1}},
		toon.Object{{Key: "name", Value: "search"}, {Key: "server", Value: "web"}, {Key: "args", Value: 2}},
	}
	out, err := toon.Encode(toon.Object{
		{Key: "tools", Value: tools},
		{Key: "note", Value: "ranked: best first"},
	}, toon.Options{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(out)
	// Output:
	// tools[2]{name,server,args}:
	//   read_file,fs,1
	//   search,web,2
	// note: "ranked: best first"
}

// EncodeJSON keeps key order and the exact digits of numbers.
func ExampleEncodeJSON() {
	out, err := toon.EncodeJSON([]byte(`{"id": 12345678901234567890, "price": 9.50, "tags": ["a", "b|c"]}`),
		toon.Options{Delimiter: '|'})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(out)
	// Output:
	// id: 12345678901234567890
	// price: 9.5
	// tags[2|]: a|"b|c"
}

func ExampleDecode() {
	v, err := toon.Decode("user:\n  name: Ada\n  langs[2]: go,ts", toon.DecodeOptions{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	user, _ := v.(toon.Object).Lookup("user")
	fmt.Printf("%v\n", user)
	// Output:
	// [{name Ada} {langs [go ts]}]
}
