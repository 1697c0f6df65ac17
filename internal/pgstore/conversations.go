package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/gateway"
)

// Conversations is the gateway's conversation index kept in the store
// (gateway.Options.Conversations), so that a request reaching any replica
// finds the conversation another replica served. A conversation's row goes
// with its session (retention, `mcproxy sessions prune`).
func (s *Store) Conversations() gateway.Index { return conversations{s} }

type conversations struct{ s *Store }

var _ gateway.Index = conversations{}

// LockConversation takes conversation conv's lock across replicas
// (gateway.Options.Lock): Lock's advisory lock, named after conv.
func (s *Store) LockConversation(ctx context.Context, conv string) (unlock func(), err error) {
	return s.Lock(ctx, "conversation:"+conv)
}

// Match implements gateway.Index. A failed read is logged and matches
// nothing (the request then starts a conversation, as one the index never
// saw would).
func (c conversations) Match(sc gateway.Scope, ids []string) (string, int, bool) {
	if len(ids) == 0 {
		return "", 0, false
	}
	ctx, cancel := c.s.ctx()
	defer cancel()
	rows, err := c.s.pool.Query(ctx, "SELECT conv, last FROM gateway_conversations WHERE cred = $1 AND name = $2 AND last = ANY($3)", sc.Cred, sc.Name, ids)
	var found map[string]string // last -> conv
	if err == nil {
		found = map[string]string{}
		var conv, last string
		_, err = pgx.ForEachRow(rows, []any{&conv, &last}, func() error {
			found[last] = conv
			return nil
		})
	}
	if err != nil {
		c.s.log.Warn("reading the conversation index", zap.String("store", c.s.where), zap.Error(err))
		return "", 0, false
	}
	// The longest known prefix wins, as in gateway.Conversations.
	for i := len(ids) - 1; i >= 0; i-- {
		if conv, ok := found[ids[i]]; ok {
			return conv, i + 1, true
		}
	}
	return "", 0, false
}

// Advance implements gateway.Index.
func (c conversations) Advance(conv string, sc gateway.Scope, last string) error {
	ctx, cancel := c.s.ctx()
	defer cancel()
	if _, err := c.s.pool.Exec(ctx, `INSERT INTO gateway_conversations (conv, cred, name, last) VALUES ($1, $2, $3, $4)
		ON CONFLICT (conv) DO UPDATE SET last = EXCLUDED.last
		WHERE gateway_conversations.cred = EXCLUDED.cred AND gateway_conversations.name = EXCLUDED.name`, conv, sc.Cred, sc.Name, last); err != nil {
		return fmt.Errorf("writing the conversation index to %s: %w", c.s.where, err)
	}
	return nil
}
