package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// approvalStore is the approvals of the data directory dir, or shared's
// when not nil.
func approvalStore(dir string, shared *pgstore.Store) *integrity.Store {
	if shared != nil {
		return integrity.NewStoreWith(shared.Approvals())
	}
	return integrity.NewStore(dir)
}

// revisionStore is shared's revisions; nil (the file) without one.
func revisionStore(shared *pgstore.Store) upstream.RevisionStore {
	if shared == nil {
		return nil
	}
	return shared.Revisions()
}

// newReviewer builds the tool-integrity reviewer the catalog runs every
// listing through: tools whose definition changed since approval, or whose
// text looks like an injection, are held until `mcproxy tools approve`
// (issue 16). Approvals live in <data_dir>/tool-approvals.json, or in the
// shared store when one is configured.
func newReviewer(cfg *config.Config, log *zap.Logger, shared *pgstore.Store) *integrity.Reviewer {
	return integrity.NewReviewer(approvalStore(config.ExpandHome(cfg.DataDir), shared), integrity.Options{
		Quarantine: cfg.Quarantined,
		Logger:     log.Named("integrity"),
	})
}

// startGuard starts the reviewer's poll of the approvals file, so an
// approval takes effect in this running proxy within a second. It is
// stopped by stopGuardPoll. Calling it twice does nothing.
func (s *stack) startGuard() {
	if s.stopGuard != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopGuard = cancel
	s.guardDone = goroutine.Go(s.log, "tool approvals poll", func() { s.reviewer.Run(ctx) })
}

func (s *stack) stopGuardPoll() {
	if s.stopGuard != nil {
		s.stopGuard()
		<-s.guardDone
	}
}
