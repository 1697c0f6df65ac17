package server

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"golang.org/x/tools/txtar"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/testenv/golden"
)

// TestConversations replays the recorded MCP conversations of
// testdata/conversations/*.txtar (go-sdk's conformance style): each file's
// "client" section is sent line by line over stdio to a front built as
// mcproxy serve builds it (the production ranking, the default listing arm)
// over a real upstream, and everything the front answers must equal the
// file's "server" section, one indented JSON message each. A refactor that
// changes what a client sees shows up as a diff here. To record a new
// conversation, write its client section and run
//
//	go test ./internal/server -run Conversations -update
func TestConversations(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "conversations", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations in testdata/conversations (%v)", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			client := section(t, ar, "client")
			c := startStdio(t, conversationFront(t))
			var got bytes.Buffer
			for _, line := range strings.Split(strings.TrimSpace(string(client.Data)), "\n") {
				c.send(line)
				if !answered(line) {
					continue
				}
				msg := c.next()
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, []byte(msg), "", "  "); err != nil {
					t.Fatalf("answer to %s is not JSON: %q", line, msg)
				}
				got.Write(pretty.Bytes())
				got.WriteString("\n")
			}
			c.close()
			section(t, ar, "server").Data = got.Bytes()
			golden.Check(t, path, txtar.Format(ar))
		})
	}
}

// section returns the named file of ar.
func section(t *testing.T, ar *txtar.Archive, name string) *txtar.File {
	t.Helper()
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			return &ar.Files[i]
		}
	}
	t.Fatalf("no %q section", name)
	return nil
}

// answered reports whether the front answers a client line: everything but
// a notification (a message without an id) or a batch of them.
func answered(line string) bool {
	var one struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal([]byte(line), &one) == nil {
		return hasID(one.ID)
	}
	var batch []json.RawMessage
	if json.Unmarshal([]byte(line), &batch) != nil || len(batch) == 0 {
		return true // not JSON, or an empty batch: an error answers it
	}
	for _, e := range batch {
		if json.Unmarshal(e, &one) != nil || hasID(one.ID) {
			return true
		}
	}
	return false
}

// conversationFront is the front of the recorded conversations: retrieve
// mode over one real upstream ("test"), ranked by the production pipeline,
// rendered with the default arm and indexed on full metadata, as mcproxy
// serves.
func conversationFront(t *testing.T) *Server {
	t.Helper()
	arm, err := arms.Resolve(config.DefaultArm)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rank, err := retrieval.New(ix, nil, retrieval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rank.Close() })
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: rank}, Options{
		Render:        ArmRenderer(arm.EncodeListing),
		IndexMetadata: arms.BaselineMetadata,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hasID reports whether a JSON-RPC message's id makes it a request (or a
// response): present and not null.
func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }
