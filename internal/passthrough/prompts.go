package passthrough

import (
	"context"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// getPrompt serves prompts/get for every exposed prompt: it finds the
// server and the prompt's own name behind the exposed name and asks it.
func (c *catalogFront) getPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	c.mu.RLock()
	r, ok := c.prompts[req.Params.Name]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no prompt %q: list them with prompts/list", req.Params.Name)
	}
	// A 2026-07-28 upstream gets the request as the client sent it, and
	// its input_required result goes back (forwarding): to a 2026-07-28
	// client as it is; for a 2025-11-25 client mcp-go's front asks the
	// client with server-to-client requests and runs this handler again
	// with the answers, which then go upstream the same way.
	meta := req.Params.Meta
	if !mcpserver.IsModernRequest(ctx) {
		meta = sessionMeta(ctx)
	}
	uctx := forwarding(c.forClient(ctx), meta, req.Params.MultiRoundTripParams)
	res, err := c.up.GetPrompt(uctx, r.server, r.name, req.Params.Arguments)
	if coded := UpstreamError(ctx, err); coded != nil {
		return nil, coded
	}
	if err != nil {
		return nil, fmt.Errorf("getting prompt %q from %q: %w", r.name, r.server, err)
	}
	out := *res
	if out.ResultType != mcp.ResultTypeInputRequired {
		// The front states its own result type; only a 2026-07-28
		// upstream's question to a forwarded request passes on as it
		// came.
		out.ResultType = ""
	}
	// Embedded resources and resource_links of the later of two servers
	// that claim one URI carry the URI the client can read (urirewrite.go).
	cloned := false
	for i, m := range res.Messages {
		if ct, changed := c.exposeContent(r.server, m.Content); changed {
			if !cloned {
				out.Messages, cloned = slices.Clone(res.Messages), true
			}
			out.Messages[i].Content = ct
		}
	}
	return &out, nil
}

// promptCompleter routes completion/complete for a prompt's argument to the
// server that owns the prompt, under the prompt's own name.
type promptCompleter struct{ c *catalogFront }

func (p promptCompleter) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	p.c.mu.RLock()
	r, ok := p.c.prompts[name]
	p.c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no prompt %q: list them with prompts/list", name)
	}
	params := mcp.CompleteParams{
		Ref:      mcp.PromptReference{Type: "ref/prompt", Name: r.name},
		Argument: arg,
		Context:  cctx,
	}
	return p.c.complete(ctx, r.server, params)
}

// resourceCompleter routes completion/complete for a resource template's
// argument to the server that owns the template (or the resource).
type resourceCompleter struct{ c *catalogFront }

func (rc resourceCompleter) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	server, orig, ok := rc.c.templateOwner(uri)
	if !ok {
		server, orig, ok = rc.c.resolve(uri)
	}
	if !ok {
		return nil, fmt.Errorf("no resource template %q: list them with resources/templates/list", uri)
	}
	params := mcp.CompleteParams{
		Ref:      mcp.ResourceReference{Type: "ref/resource", URI: orig},
		Argument: arg,
		Context:  cctx,
	}
	return rc.c.complete(ctx, server, params)
}

func (c *catalogFront) complete(ctx context.Context, server string, params mcp.CompleteParams) (*mcp.Completion, error) {
	c.mu.RLock()
	cat := c.catalogs[server]
	c.mu.RUnlock()
	if cat == nil || cat.Capabilities.Completions == nil {
		// The server offers no completion: no suggestions, as the spec's
		// default answer.
		return &mcp.Completion{Values: []string{}}, nil
	}
	res, err := c.up.Complete(c.forClient(ctx), server, params)
	if err != nil {
		return nil, fmt.Errorf("completing %q on %q: %w", params.Argument.Name, server, err)
	}
	out := res.Completion
	out.Values = slices.Clone(out.Values)
	return &out, nil
}

// templateOwner finds the server whose exposed template text is exactly
// tmpl, and the template as that server sent it.
func (c *catalogFront) templateOwner(tmpl string) (server, orig string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, t := range c.tmpls {
		if templateKey(t.tmpl) == tmpl {
			return t.server, t.orig, true
		}
	}
	return "", "", false
}

// sessionMeta is the _meta a 2025-11-25 client's request goes upstream
// with when forwarded: the capabilities its session declared at
// initialize and the log level it set (nil: the front knows neither).
func sessionMeta(ctx context.Context) *mcp.Meta {
	cs := mcpserver.ClientSessionFromContext(ctx)
	fields := map[string]any{}
	if info, ok := cs.(mcpserver.SessionWithClientInfo); ok {
		fields[mcp.MetaKeyClientCapabilities] = info.GetClientCapabilities()
	}
	if l, ok := cs.(mcpserver.SessionWithLogging); ok && l.GetLogLevel() != "" {
		fields[mcp.MetaKeyLogLevel] = l.GetLogLevel()
	}
	if len(fields) == 0 {
		return nil
	}
	return &mcp.Meta{AdditionalFields: fields}
}
