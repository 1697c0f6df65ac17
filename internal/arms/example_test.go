package arms_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
)

func Example() {
	tool := config.Tool{
		ID: "fs:read_file", Server: "fs", Name: "read_file",
		Description: "Read a text file.",
		Schema: json.RawMessage(`{"type":"object","required":["path"],"properties":{
			"path":{"type":"string","description":"File to read"},
			"encoding":{"type":"string","enum":["utf-8","latin1"],"default":"utf-8"},
			"lines":{"type":"array","items":{"type":"integer"}}}}`),
	}
	for _, name := range []string{arms.CompactName, arms.BaselineName} {
		a, err := arms.Resolve(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		text, err := a.EncodeTool(tool)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(text)
	}
	// Output:
	// fs:read_file(path:string, encoding?:"utf-8"|"latin1", lines?:integer[])|Read a text file.
	// fs:read_file
	// Read a text file.
	// {"properties":{"encoding":{"default":"utf-8","enum":["utf-8","latin1"],"type":"string"},"lines":{"items":{"type":"integer"},"type":"array"},"path":{"description":"File to read","type":"string"}},"required":["path"],"type":"object"}
}
