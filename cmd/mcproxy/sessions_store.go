package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcproxy/mcproxy/internal/session"
)

// storedSessions is `mcproxy sessions` with store.postgres set: the
// sessions kept in the store (the gateway's conversations) are read from
// copies fetched into tmp; what data_dir holds besides (this machine's MCP
// client sessions) is read as without a store.
type storedSessions struct {
	opts  session.Options // Store set; Dir the data_dir's sessions
	tmp   string
	where string // the store, redacted
}

func (ss *storedSessions) run(w io.Writer, sub string, pos []string, olderThan *string, dryRun *bool) error {
	local := ss.opts
	local.Store = nil
	switch sub {
	case "list":
		return ss.list(w)
	case "show", "archive", "rebuild":
		copyOpts, stored, err := ss.fetch(pos[0])
		if err != nil {
			return err
		}
		switch {
		case !stored && sub == "show":
			return showSession(w, local, pos[0])
		case !stored && sub == "archive":
			return writeOriginal(w, local, pos[0], pos[1])
		case !stored:
			return rebuildSession(w, local, pos[0])
		case sub == "show":
			fmt.Fprintf(w, "kept in\t%s (what follows reads a copy)\n", ss.where)
			return showSession(w, copyOpts, pos[0])
		case sub == "archive":
			return writeOriginal(w, copyOpts, pos[0], pos[1])
		default:
			return fmt.Errorf("session %s is kept in %s, and a replica rebuilds its state from the transcript whenever it opens it; rebuild works on sessions kept in files", pos[0], ss.where)
		}
	case "prune":
		return pruneSessions(w, ss.opts, *olderThan, *dryRun)
	}
	return fmt.Errorf("unknown subcommand %q", sub)
}

func writeOriginal(w io.Writer, opts session.Options, id, what string) error {
	data, err := session.ReadOriginal(opts, id, what)
	if err == nil {
		_, err = w.Write(data)
	}
	return err
}

// fetch copies session id from the store into tmp; stored is false when
// the store does not hold it.
func (ss *storedSessions) fetch(id string) (session.Options, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	all, err := ss.opts.Store.List(ctx)
	if err != nil {
		return ss.opts, false, err
	}
	copyOpts := ss.opts
	copyOpts.Dir = ss.tmp
	for _, s := range all {
		if s.ID == id {
			return copyOpts, true, session.Fetch(ctx, copyOpts, s)
		}
	}
	return copyOpts, false, nil
}

// list writes the store's sessions, then the others data_dir holds.
func (ss *storedSessions) list(w io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	all, err := ss.opts.Store.List(ctx)
	if err != nil {
		return err
	}
	copyOpts := ss.opts
	copyOpts.Dir = ss.tmp
	inStore := map[string]bool{}
	for _, s := range all {
		if err := session.Fetch(ctx, copyOpts, s); err != nil {
			return err
		}
		inStore[s.ID] = true
	}
	shared, err := session.List(copyOpts)
	if err != nil {
		return err
	}
	if err := writeSessionList(w, shared, ss.where, nil); err != nil {
		return err
	}
	local := ss.opts
	local.Store = nil
	mine, err := session.List(local)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var rest []session.Summary
	for _, s := range mine {
		if !inStore[s.ID] {
			rest = append(rest, s)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return writeSessionList(w, rest, local.Dir+" (this machine only)", nil)
}
