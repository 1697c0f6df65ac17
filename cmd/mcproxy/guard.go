package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/integrity"
)

// newReviewer builds the tool-integrity reviewer the catalog runs every
// listing through: tools whose definition changed since approval, or whose
// text looks like an injection, are held until `mcproxy tools approve`
// (issue 16). Approvals live in <data_dir>/tool-approvals.json.
func newReviewer(cfg *config.Config, log *zap.Logger) *integrity.Reviewer {
	return integrity.NewReviewer(integrity.NewStore(config.ExpandHome(cfg.DataDir)), integrity.Options{
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
