package server

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// newDocsUpstream is a real mcp-go server named name that offers the same
// URIs as any other copy of it: a subscribable resource docs://readme, a
// template docs://page/{n} with completion, a tool "link" returning a
// resource_link and an embedded resource for docs://readme, and a prompt
// "embed" embedding it. Its contents say
// which copy answered.
func newDocsUpstream(name string) *mcpserver.MCPServer {
	us := mcpserver.NewMCPServer(name, "1", mcpserver.WithResourceCapabilities(true, true), mcpserver.WithToolCapabilities(false),
		mcpserver.WithPromptCapabilities(false),
		mcpserver.WithCompletions(),
		mcpserver.WithResourceCompletionProvider(completeFunc(func(uri string) []string { return []string{name + " completes " + uri} })))
	us.AddResource(mcp.NewResource("docs://readme", "readme"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "docs://readme", Text: "readme of " + name}}, nil
	})
	us.AddResourceTemplate(mcp.NewResourceTemplate("docs://page/{n}", "page"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "page of " + name}}, nil
	})
	us.AddPrompt(mcp.NewPrompt("embed"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("embed", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("read this")),
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "docs://readme", Text: "embedded by " + name})),
		}), nil
	})
	us.AddTool(mcp.NewTool("link"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewResourceLink("docs://readme", "readme", "", "text/plain"),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "docs://readme", Text: "embedded by " + name}),
			mcp.NewTextContent("by " + name),
		}}, nil
	})
	return us
}

type completeFunc func(uri string) []string

func (f completeFunc) CompleteResourceArgument(_ context.Context, uri string, _ mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: f(uri)}, nil
}

// TestCollidingURIsRewritten puts two servers that offer the same resource
// URI and URI template behind the front: the server that came up first
// keeps the URIs, the later one's
// are exposed as mcproxy://<server>/<uri>, and every way to reach a
// resource (read, template read, completion, subscription and its updates,
// resource_links and embedded resources in tool results and prompts)
// reaches the
// server that offered it. The "prefix": "" server's are withheld.
func TestCollidingURIsRewritten(t *testing.T) {
	ups := map[string]*mcpserver.MCPServer{}
	servers := map[string]config.ServerConfig{}
	for _, name := range []string{"a", "b"} {
		ups[name] = newDocsUpstream(name)
		ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(ups[name]))
		t.Cleanup(ts.Close)
		servers[name] = config.ServerConfig{URL: ts.URL + "/mcp"}
	}
	f := startCatalogFront(t, servers)
	s := f.Server
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	updates := [2]chan string{make(chan string, 10), make(chan string, 10)}
	var clients [2]*client.Client
	for i := range clients {
		ch := updates[i]
		clients[i] = connect(t, f, "streamable", func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				ch <- n.Params.AdditionalFields["uri"].(string)
			}
		})
	}
	c := clients[0]

	// Both servers' catalogs are in.
	var res *mcp.ListResourcesResult
	waitFor(t, "the resources of a and b", func() bool {
		var err error
		res, err = c.ListResources(ctx, mcp.ListResourcesRequest{})
		return err == nil && len(res.Resources) == 2
	})
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	// Which of a and b came up first decides which keeps the URIs.
	keeper, later := "a", "b"
	if slices.Contains(uris, "mcproxy://a/docs://readme") {
		keeper, later = "b", "a"
	}
	rewritten := "mcproxy://" + later + "/docs://readme"
	if want := []string{"docs://readme", rewritten}; !slices.Equal(uris, want) {
		t.Fatalf("resources/list: got %q, want %q (the later server's URI rewritten)", uris, want)
	}
	tl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tmpls []string
	for _, tm := range tl.ResourceTemplates {
		tmpls = append(tmpls, tm.URITemplate.Raw())
	}
	slices.Sort(tmpls)
	if want := []string{"docs://page/{n}", "mcproxy://" + later + "/docs://page/{n}"}; !slices.Equal(tmpls, want) {
		t.Errorf("resources/templates/list: got %q, want %q", tmpls, want)
	}

	read := func(uri string) (string, string) {
		t.Helper()
		r, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		tc := r.Contents[0].(mcp.TextResourceContents)
		return tc.URI, tc.Text
	}
	for _, tc := range []struct{ uri, server string }{
		{"docs://readme", keeper},
		{rewritten, later},
	} {
		if u, text := read(tc.uri); u != tc.uri || text != "readme of "+tc.server {
			t.Errorf("resources/read %s: got %q from %q, want %q from %q", tc.uri, text, u, "readme of "+tc.server, tc.uri)
		}
	}
	if u, text := read("mcproxy://" + later + "/docs://page/7"); u != "mcproxy://"+later+"/docs://page/7" || text != "page of "+later {
		t.Errorf("templated read of the later server: got %q for %q", text, u)
	}
	if _, text := read("docs://page/7"); text != "page of "+keeper {
		t.Errorf("templated read of the keeper: got %q", text)
	}

	comp, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
		Ref:      mcp.ResourceReference{Type: "ref/resource", URI: "mcproxy://" + later + "/docs://page/{n}"},
		Argument: mcp.CompleteArgument{Name: "n", Value: "1"},
	}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{later + " completes docs://page/{n}"}) {
		t.Errorf("completion of the rewritten template: got %+v, %v; want the later server asked under its own template", comp, err)
	}

	for server, want := range map[string]string{keeper: "docs://readme", later: rewritten} {
		out := callTool(t, c, server+"__link", nil)
		link, ok := out.Content[0].(mcp.ResourceLink)
		if !ok || link.URI != want {
			t.Errorf("%s__link resource_link: got %+v, want URI %q", server, out.Content[0], want)
		}
		emb, ok := out.Content[1].(mcp.EmbeddedResource)
		if !ok || emb.Resource.(mcp.TextResourceContents).URI != want {
			t.Errorf("%s__link embedded resource: got %+v, want URI %q", server, out.Content[1], want)
		}
		if _, text := read(link.URI); text != "readme of "+server {
			t.Errorf("reading %s__link's resource_link %q: got %q, want %s's", server, link.URI, text, server)
		}
	}

	for server, want := range map[string]string{keeper: "docs://readme", later: rewritten} {
		p, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: server + "__embed"}})
		if err != nil {
			t.Fatalf("prompts/get %s__embed: %v", server, err)
		}
		emb, ok := p.Messages[1].Content.(mcp.EmbeddedResource)
		if !ok || emb.Resource.(mcp.TextResourceContents).URI != want {
			t.Errorf("%s__embed embedded resource: got %+v, want URI %q", server, p.Messages[1].Content, want)
		}
	}

	subscribe := func(c *client.Client, uri string) {
		t.Helper()
		if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			t.Fatalf("resources/subscribe %s: %v", uri, err)
		}
	}
	subscribe(clients[0], rewritten)
	subscribe(clients[1], "docs://readme")
	ups[later].SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "docs://readme"})
	ups[keeper].SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "docs://readme"})
	for i, want := range []string{rewritten, "docs://readme"} {
		select {
		case uri := <-updates[i]:
			if uri != want {
				t.Errorf("session %d: update for %q, want %q", i, uri, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("session %d got no update for %q within 10s", i, want)
		}
	}
	// A round trip each, then nothing more may have come.
	for i, c := range clients {
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updates[i]:
			t.Errorf("session %d got a second update, for %q: each subscribed to one server's resource", i, uri)
		default:
		}
	}

	// mcproxy list shows what the client sees.
	var exposed []string
	for _, e := range s.Exposed(KindResources) {
		if !e.Template {
			exposed = append(exposed, e.Server+" "+e.Name+" "+e.Description)
		}
	}
	slices.Sort(exposed)
	want := []string{keeper + " docs://readme readme", later + " " + rewritten + " readme"}
	slices.Sort(want)
	if !slices.Equal(exposed, want) {
		t.Errorf("Exposed(resources): got %q, want %q", exposed, want)
	}
	// A URI under the rewritten form naming no server is not guessed at.
	_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "mcproxy://nobody/docs://readme"}})
	if err == nil || !strings.Contains(err.Error(), "mcproxy://nobody/docs://readme") {
		t.Errorf("reading a rewritten URI of no server: got %v, want an error naming it", err)
	}
}
