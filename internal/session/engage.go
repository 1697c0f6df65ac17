package session

import (
	"context"
	"fmt"
)

// Engage marks the session engaged for good. A front that adds noa's
// tools, text and ref tags to the model's requests only once a
// conversation is long enough for compression to pay (the gateway:
// gateway.compress_at) records here that it has, so that a restart does
// not take them away again: each switch would rewrite the model's prompt
// cache. The mark is a transcript record, durable before Engage returns; a
// session already engaged records nothing. Turn and Peek report it
// (Turn.Engaged).
func (h *Host) Engage(ctx context.Context) error {
	if err := h.begin(ctx); err != nil {
		return err
	}
	if h.engaged {
		h.mu.Unlock()
		return nil
	}
	off, err := h.appendRecords(record{Kind: kindEngage})
	if err != nil {
		h.mu.Unlock()
		return fmt.Errorf("recording that session %s is engaged: %w", h.id, err)
	}
	h.engaged = true
	h.mu.Unlock()
	return h.committed(off)
}

// Engaged reports whether Engage was recorded.
func (h *Host) Engaged() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engaged
}
