package passthrough

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// awaitOwner runs before mcp-go handles any request. Until the upstreams
// have had their first chance to connect (Options.Started), it holds a
// prompts/get, resources/read or completion/complete whose prompt or
// resource no server offers yet, until one does or Started: the prompts and
// resources reach mcp-go only when their server's catalog arrives (a warm
// start's file holds tools only), so a one-shot client that asks right
// after initialize would otherwise get "not found" from a server that is
// still starting, while its tool calls wait for their server (issue 29).
// The wait is bounded as a tool call's is: Started comes once every
// server is up or its first attempt failed, within its init_timeout. A
// name no server offers then gets "not found" as always.
func (c *catalogFront) awaitOwner(ctx context.Context, _ any, message any) error {
	select {
	case <-c.started:
		return nil
	default:
	}
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	known := c.ownerKnown(raw)
	if known == nil {
		return nil
	}
	for {
		c.syncMu.Lock()
		ok, synced := known(), c.synced
		c.syncMu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-c.started:
			return nil
		case <-synced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ownerKnown returns, for a prompts/get, resources/read or
// completion/complete, whether a server offers what it names; nil for any
// other request. It is called with syncMu held, so what it sees is
// registered with mcp-go.
func (c *catalogFront) ownerKnown(raw json.RawMessage) func() bool {
	if !bytes.Contains(raw, []byte(mcp.MethodPromptsGet)) && !bytes.Contains(raw, []byte(mcp.MethodResourcesRead)) &&
		!bytes.Contains(raw, []byte(mcp.MethodCompletionComplete)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
			Ref  struct {
				Type string `json:"type"`
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"ref"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	switch {
	case req.Method == string(mcp.MethodPromptsGet) && req.Params.Name != "":
		return func() bool { return c.promptKnown(req.Params.Name) }
	case req.Method == string(mcp.MethodResourcesRead) && req.Params.URI != "":
		return func() bool { return c.resourceKnown(req.Params.URI) }
	case req.Method == string(mcp.MethodCompletionComplete) && req.Params.Ref.Type == "ref/prompt" && req.Params.Ref.Name != "":
		return func() bool { return c.promptKnown(req.Params.Ref.Name) }
	case req.Method == string(mcp.MethodCompletionComplete) && req.Params.Ref.Type == "ref/resource" && req.Params.Ref.URI != "":
		return func() bool { return c.resourceKnown(req.Params.Ref.URI) }
	}
	return nil
}

func (c *catalogFront) promptKnown(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.prompts[name]
	return ok
}

// resourceKnown reports whether a server lists uri, has a template that
// matches it or returned it from a tool. The lone server that offers
// resources at all, which resources/read falls back on, does not count
// here: a server still connecting may be the one that lists it.
func (c *catalogFront) resourceKnown(uri string) bool {
	if s, _, ok := splitRewritten(uri); ok && c.rewritable(s) {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.claimantLocked(uri); ok {
		return true
	}
	_, ok := c.linked[uri]
	return ok
}
