package server

import "errors"

// Holder is implemented by an Upstreams that holds tools back for the
// user's review (integrity.Guard, issue 16). Held returns why server:tool
// is held, written for the model, or nil. A held tool is missing from
// Tools, so call_tool asks Held before answering "unknown tool".
type Holder interface {
	Held(server, tool string) error
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
