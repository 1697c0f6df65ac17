package index_test

import (
	"context"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

func Example() {
	ix, err := index.New(index.Options{}) // in memory; set Dir for an on-disk index
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ix.Close()

	// Each upstream's tools are upserted as a whole; a later Upsert for the
	// same server replaces them.
	err = ix.Upsert("filesystem", []config.ToolMetadata{
		{ServerName: "filesystem", Name: "read_text_file", Description: "Read a file and return its contents as text.",
			ParamsJSON: `{"type":"object","properties":{"path":{"type":"string","description":"File to read"}}}`},
		{ServerName: "filesystem", Name: "write_file", Description: "Create or overwrite a file."},
		{ServerName: "filesystem", Name: "move_file", Description: "Move or rename a file or directory."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = ix.Upsert("git", []config.ToolMetadata{
		{ServerName: "git", Name: "git_log", Description: "Show the commit history."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, q := range []string{"show me the contents of a file", "rename a directory", "commit history"} {
		hits, err := ix.Search(context.Background(), q, 1)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s → %s\n", q, hits[0].ID)
	}
	// Output:
	// show me the contents of a file → filesystem:read_text_file
	// rename a directory → filesystem:move_file
	// commit history → git:git_log
}
