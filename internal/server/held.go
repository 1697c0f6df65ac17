package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Holder is implemented by an Upstreams that holds tools back for the
// user's review (integrity.Guard, issue 16). Held returns why server:tool
// is held, written for the model, or nil; HeldIDs lists the held tools as
// server:tool ids. A held tool is missing from Tools, so call_tool asks
// Held before answering "unknown tool", and direct mode asks HeldIDs which
// tool an unknown name would have been.
type Holder interface {
	Held(server, tool string) error
	HeldIDs() []string
}

// heldText is why server:tool is held, or "" when it is not (or the
// upstreams hold nothing back).
func (s *Server) heldText(server, tool string) string {
	h, ok := s.up.(Holder)
	if !ok {
		return ""
	}
	if err := h.Held(server, tool); err != nil {
		return err.Error()
	}
	return ""
}

// isHeld reports whether err is a call refused because the tool is held.
func isHeld(err error) bool {
	var h interface{ Held() bool }
	return errors.As(err, &h) && h.Held()
}

// refuseHeldDirect is an OnRequestInitialization hook for direct mode: a
// tools/call of a name no tool is registered under, which is the name a
// held tool would have, is refused with why it is held and how the user
// releases it, as call_tool refuses it, instead of mcp-go's bare "tool not
// found". mcp-go sends the refusal as a JSON-RPC error (Invalid Request),
// as it does "not found": a hook cannot answer with a tool result.
func (s *Server) refuseHeldDirect(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"tools/call"`)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodToolsCall) || req.Params.Name == "" {
		return nil
	}
	if s.mcp.GetTool(req.Params.Name) != nil {
		return nil // registered: its own handler answers
	}
	h, ok := s.up.(Holder)
	if !ok {
		return nil
	}
	for _, id := range h.HeldIDs() {
		server, tool, ok := config.SplitToolID(id)
		if !ok {
			continue
		}
		if name, _ := prefixedName(s.opts.Prefix(server), server, tool); name == req.Params.Name {
			if err := h.Held(server, tool); err != nil {
				return err
			}
		}
	}
	return nil
}
