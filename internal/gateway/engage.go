package gateway

import (
	"context"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// A conversation is forwarded as the client sent it (its body's bytes, no
// tools, system text, ref tags or nudge of noa's) until it is engaged, so
// that one that never needs compression costs exactly what going straight
// costs (issue 27: the additions are about 760 tokens a request plus 28 a
// message). The gateway still records every message, and noa still runs
// each turn, so the archive and the refs are ready when it engages.
//
// It engages the first time a turn finds it due (engageDue) and stays
// engaged for its life, restarts included (Host.Engage), so the additions
// change the model's prompt cache once, not back and forth.

// engageDue reports whether turn t, of a conversation not yet engaged and
// taken for a request whose messages are core, calls for noa's additions:
// the conversation's recorded tokens reached at(window) (gateway.compress_at
// and compress_at_tokens, config.GatewayConfig.EngageAt), or noa's view is no longer
// the client's messages (a summary, an emergency cut, a result cut when it
// was recorded), which the client's body cannot carry.
//
// It does not wait for a nudge: noa's nudge pacing is stateful (a nudge
// left unanswered delays the next), and a conversation that must be cut to
// fit the window cannot wait for one.
func engageDue(t Turn, core []noa.CoreMessage, at func(window int) int) bool {
	return t.Tokens >= at(t.Limit) || !sameView(t.View, core)
}

// sameView reports whether view is the messages core, part for part, with
// the same texts.
func sameView(view, core []noa.CoreMessage) bool {
	if len(view) != len(core) {
		return false
	}
	for i := range view {
		if view[i].ID != core[i].ID || view[i].Text != core[i].Text {
			return false
		}
	}
	return true
}

// engaging is a conversation's Host whose Turn engages the conversation
// when it is due, before the turn's request is built.
type engaging struct {
	Host
	core []noa.CoreMessage // the request's messages
	at   func(int) int     // config.GatewayConfig.EngageAt
}

func (e engaging) Turn(ctx context.Context) (Turn, error) {
	t, err := e.Host.Turn(ctx)
	if err != nil || t.Engaged || !engageDue(t, e.core, e.at) {
		return t, err
	}
	if err := e.Host.Engage(ctx); err != nil {
		return Turn{}, fmt.Errorf("engaging noa in the conversation: %w", err)
	}
	t.Engaged, t.Engaging = true, true
	return t, nil
}
