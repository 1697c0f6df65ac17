package pgstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/learn"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Approvals is the tool approvals kept in the store, for
// integrity.NewStoreWith. An update is a transaction that holds the
// document's row lock, so replicas' reviews and `mcproxy tools approve`
// never lose each other's writes; its commit notifies every replica.
func (s *Store) Approvals() integrity.Backend { return approvals{s} }

type approvals struct{ s *Store }

var (
	_ integrity.Backend  = approvals{}
	_ integrity.Notifier = approvals{}
)

func (a approvals) Load() (*integrity.Approvals, error) {
	ctx, cancel := a.s.ctx()
	defer cancel()
	body, _, err := a.s.loadDoc(ctx, a.s.pool, docApprovals, false)
	if err != nil {
		return nil, fmt.Errorf("reading tool approvals: %w", err)
	}
	return decodeApprovals(body, a.s.where)
}

func decodeApprovals(body []byte, where string) (*integrity.Approvals, error) {
	if body == nil {
		body = []byte(`{"servers":{}}`)
	}
	return integrity.DecodeApprovals(body, "in "+where)
}

func (a approvals) Update(fn func(*integrity.Approvals) (bool, error)) (*integrity.Approvals, error) {
	ctx, cancel := a.s.ctx()
	defer cancel()
	var out *integrity.Approvals
	err := pgx.BeginFunc(ctx, a.s.pool, func(tx pgx.Tx) error {
		// The row must exist for FOR UPDATE to lock it.
		if _, err := tx.Exec(ctx, `INSERT INTO documents (name, body) VALUES ($1, '{"servers":{}}') ON CONFLICT DO NOTHING`, docApprovals); err != nil {
			return fmt.Errorf("writing tool approvals to %s: %w", a.s.where, err)
		}
		body, _, err := a.s.loadDoc(ctx, tx, docApprovals, true)
		if err != nil {
			return err
		}
		ap, err := decodeApprovals(body, a.s.where)
		if err != nil {
			return err
		}
		out = ap
		changed, err := fn(ap)
		if err != nil || !changed {
			return errKeep{err}
		}
		b, err := json.Marshal(ap)
		if err != nil {
			return fmt.Errorf("encoding tool approvals: %w", err)
		}
		return a.s.saveDoc(ctx, tx, docApprovals, b, approvalsChannel)
	})
	if k, ok := errors.AsType[errKeep](err); ok {
		return out, k.err
	}
	if err != nil {
		return nil, fmt.Errorf("writing tool approvals: %w", err)
	}
	return out, nil
}

// errKeep rolls back an update that changed nothing (or whose fn failed)
// and carries fn's error out.
type errKeep struct{ err error }

func (e errKeep) Error() string {
	if e.err == nil {
		return "unchanged"
	}
	return e.err.Error()
}

func (a approvals) Stamp() string { return a.s.stamp(docApprovals) }

func (a approvals) Changes() <-chan struct{} { return a.s.changes }

// Learned is the learned words kept in the store, for learn.Options.
func (s *Store) Learned() learn.Backend { return learned{s} }

type learned struct{ s *Store }

var _ learn.Backend = learned{}

func (l learned) Load() (map[string][]learn.Evidence, error) {
	ctx, cancel := l.s.ctx()
	defer cancel()
	body, _, err := l.s.loadDoc(ctx, l.s.pool, docLearned, false)
	if err != nil {
		return nil, fmt.Errorf("reading learned words: %w", err)
	}
	if body == nil {
		return map[string][]learn.Evidence{}, nil
	}
	return learn.Decode(body, l.s.where)
}

// Update holds the document's row lock from reading it to writing it, so
// two replicas teaching at once each add their episodes.
func (l learned) Update(fn func(map[string][]learn.Evidence) error) (map[string][]learn.Evidence, error) {
	ctx, cancel := l.s.ctx()
	defer cancel()
	var out map[string][]learn.Evidence
	err := pgx.BeginFunc(ctx, l.s.pool, func(tx pgx.Tx) error {
		// The row must exist for FOR UPDATE to lock it.
		if _, err := tx.Exec(ctx, `INSERT INTO documents (name, body) VALUES ($1, '{"version":1,"tools":{}}') ON CONFLICT DO NOTHING`, docLearned); err != nil {
			return fmt.Errorf("writing learned words to %s: %w", l.s.where, err)
		}
		body, _, err := l.s.loadDoc(ctx, tx, docLearned, true)
		if err != nil {
			return err
		}
		tools, err := learn.Decode(body, l.s.where)
		if err != nil {
			return err
		}
		if err := fn(tools); err != nil {
			return err
		}
		b, err := learn.Encode(tools)
		if err != nil {
			return err
		}
		out = tools
		return l.s.saveDoc(ctx, tx, docLearned, b, "")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (l learned) Stamp() string { return l.s.stamp(docLearned) }

// Revisions is the negotiated protocol revisions kept in the store, for
// upstream.Options.RevisionStore.
func (s *Store) Revisions() upstream.RevisionStore { return revisions{s} }

type revisions struct{ s *Store }

func (r revisions) LoadRevisions() ([]byte, error) {
	ctx, cancel := r.s.ctx()
	defer cancel()
	body, _, err := r.s.loadDoc(ctx, r.s.pool, docRevisions, false)
	return body, err
}

func (r revisions) SaveRevisions(data []byte) error {
	ctx, cancel := r.s.ctx()
	defer cancel()
	return pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		return r.s.saveDoc(ctx, tx, docRevisions, data, "")
	})
}
