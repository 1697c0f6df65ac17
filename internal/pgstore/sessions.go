package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"

	"github.com/mcproxy/mcproxy/internal/session"
)

// Sessions is the sessions kept in the store, for session.Options.Store:
// each session's transcript records, state.json and files (archives, its
// noa configuration and tokenizer). An append is a transaction that checks
// the session's head, so a replica that lost a race appends nothing.
func (s *Store) Sessions() session.Store { return sessions{s} }

type sessions struct{ s *Store }

var _ session.Store = sessions{}

// ensure creates session id's row when it has none.
func ensure(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, "INSERT INTO sessions (id) VALUES ($1) ON CONFLICT DO NOTHING", id)
	return err
}

func (ss sessions) Head(ctx context.Context, id string) (int64, bool, error) {
	var head int64
	err := ss.s.pool.QueryRow(ctx, "SELECT head FROM sessions WHERE id = $1", id).Scan(&head)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading session %s from %s: %w", id, ss.s.where, err)
	}
	return head, true, nil
}

func (ss sessions) Append(ctx context.Context, id string, first int64, lines []byte) error {
	split := bytes.SplitAfter(lines, []byte{'\n'})
	if n := len(split); n > 0 && len(split[n-1]) == 0 {
		split = split[:n-1]
	}
	if len(split) == 0 {
		return nil
	}
	last := first + int64(len(split)) - 1
	err := pgx.BeginFunc(ctx, ss.s.pool, func(tx pgx.Tx) error {
		if err := ensure(ctx, tx, id); err != nil {
			return err
		}
		// The head check and its move in one statement, under the row's
		// lock: two appends after one head cannot both pass.
		tag, err := tx.Exec(ctx, "UPDATE sessions SET head = $3, updated = now() WHERE id = $1 AND head = $2", id, first-1, last)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return session.ErrStale
		}
		_, err = tx.Exec(ctx, `INSERT INTO session_records (session, seq, line)
			SELECT $1, $2 + t.i - 1, t.line FROM unnest($3::bytea[]) WITH ORDINALITY AS t(line, i)`, id, first, split)
		return err
	})
	if errors.Is(err, session.ErrStale) {
		return err
	}
	if err != nil {
		return fmt.Errorf("appending to session %s on %s: %w", id, ss.s.where, err)
	}
	return nil
}

func (ss sessions) Records(ctx context.Context, id string, after int64) ([]byte, error) {
	rows, err := ss.s.pool.Query(ctx, "SELECT line FROM session_records WHERE session = $1 AND seq > $2 ORDER BY seq", id, after)
	if err != nil {
		return nil, fmt.Errorf("reading session %s from %s: %w", id, ss.s.where, err)
	}
	var out []byte
	var line []byte
	_, err = pgx.ForEachRow(rows, []any{&line}, func() error {
		out = append(out, line...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading session %s from %s: %w", id, ss.s.where, err)
	}
	return out, nil
}

func (ss sessions) PutState(ctx context.Context, id string, seq int64, b []byte) error {
	err := pgx.BeginFunc(ctx, ss.s.pool, func(tx pgx.Tx) error {
		if err := ensure(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET state = $3, state_seq = $2, updated = now() WHERE id = $1 AND state_seq <= $2", id, seq, b)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the state of session %s to %s: %w", id, ss.s.where, err)
	}
	return nil
}

func (ss sessions) State(ctx context.Context, id string) ([]byte, bool, error) {
	var b []byte
	err := ss.s.pool.QueryRow(ctx, "SELECT state FROM sessions WHERE id = $1", id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && b == nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the state of session %s from %s: %w", id, ss.s.where, err)
	}
	return b, true, nil
}

func (ss sessions) PutFile(ctx context.Context, id, rel string, b []byte) error {
	err := pgx.BeginFunc(ctx, ss.s.pool, func(tx pgx.Tx) error {
		if err := ensure(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO session_files (session, rel, body) VALUES ($1, $2, $3)
			ON CONFLICT (session, rel) DO UPDATE SET body = EXCLUDED.body`, id, rel, b); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET updated = now() WHERE id = $1", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing %s of session %s to %s: %w", rel, id, ss.s.where, err)
	}
	return nil
}

func (ss sessions) Files(ctx context.Context, id string) ([]string, error) {
	rows, err := ss.s.pool.Query(ctx, "SELECT rel FROM session_files WHERE session = $1 ORDER BY rel", id)
	if err != nil {
		return nil, fmt.Errorf("listing the files of session %s on %s: %w", id, ss.s.where, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the files of session %s on %s: %w", id, ss.s.where, err)
	}
	return out, nil
}

func (ss sessions) File(ctx context.Context, id, rel string) ([]byte, error) {
	var b []byte
	err := ss.s.pool.QueryRow(ctx, "SELECT body FROM session_files WHERE session = $1 AND rel = $2", id, rel).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s of session %s: %w", rel, id, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s of session %s from %s: %w", rel, id, ss.s.where, err)
	}
	return b, nil
}

func (ss sessions) List(ctx context.Context) ([]session.StoredSession, error) {
	rows, err := ss.s.pool.Query(ctx, `SELECT s.id, s.head, s.updated,
			coalesce(length(s.state), 0)
			+ coalesce((SELECT sum(length(line)) FROM session_records r WHERE r.session = s.id), 0)
			+ coalesce((SELECT sum(length(body)) FROM session_files f WHERE f.session = s.id), 0)
		FROM sessions s ORDER BY s.updated`)
	if err != nil {
		return nil, fmt.Errorf("listing sessions on %s: %w", ss.s.where, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.StoredSession, error) {
		var x session.StoredSession
		err := r.Scan(&x.ID, &x.Records, &x.Updated, &x.Bytes)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions on %s: %w", ss.s.where, err)
	}
	return out, nil
}

func (ss sessions) Remove(ctx context.Context, id string) error {
	if _, err := ss.s.pool.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id); err != nil {
		return fmt.Errorf("removing session %s from %s: %w", id, ss.s.where, err)
	}
	return nil
}
