package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcproxy/mcproxy/internal/oauth"
)

// OAuth is the upstreams' OAuth records (their tokens and registrations)
// kept in the store, for oauth.Options.Store: each server's record is a
// document (table documents, named "oauth:<server>") holding the JSON its
// file would, and its refresh lock is Lock's, so that one replica
// refreshes for all and the others read what it stored. Like the file,
// the document holds the tokens in clear: whoever can read the database
// can use them.
func (s *Store) OAuth() oauth.Store { return oauthRecords{s} }

type oauthRecords struct{ s *Store }

var _ oauth.Store = oauthRecords{}

func oauthDoc(server string) string { return "oauth:" + server }

// removed is the body of a removed record: kept as a document, so its
// version goes on rising and no stamp is ever seen twice.
var removed = []byte("null")

func (o oauthRecords) Load(server string) (*oauth.Record, error) {
	ctx, cancel := o.s.ctx()
	defer cancel()
	body, _, err := o.s.loadDoc(ctx, o.s.pool, oauthDoc(server), false)
	if err != nil || body == nil || bytes.Equal(body, removed) {
		return nil, err
	}
	var r oauth.Record
	if err := json.Unmarshal(body, &r); err != nil {
		// Not the decoder's error: it could quote the tokens.
		return nil, fmt.Errorf("the OAuth record of %s in %s is not valid JSON: sign in again (mcproxy auth login %s)", server, o.s.where, server)
	}
	return &r, nil
}

func (o oauthRecords) Save(server string, r *oauth.Record) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the OAuth record of %s: %w", server, err)
	}
	return o.write(server, body)
}

func (o oauthRecords) write(server string, body []byte) error {
	ctx, cancel := o.s.ctx()
	defer cancel()
	return pgx.BeginFunc(ctx, o.s.pool, func(tx pgx.Tx) error {
		return o.s.saveDoc(ctx, tx, oauthDoc(server), body, "")
	})
}

func (o oauthRecords) Remove(server string) error { return o.write(server, removed) }

// Stamp is the document's version; "" when none was ever stored. A
// failed read returns the version last read.
func (o oauthRecords) Stamp(server string) string { return o.s.stamp(oauthDoc(server)) }

func (o oauthRecords) Lock(ctx context.Context, server string) (func(), error) {
	return o.s.Lock(ctx, oauthDoc(server))
}
