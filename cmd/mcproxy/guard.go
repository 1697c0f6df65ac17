package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// newGuard puts the tool-integrity guard between mgr and the front: tools
// whose definition changed since approval, or whose text looks like an
// injection, are held until `mcproxy tools approve` (issue 16). Approvals
// live in <data_dir>/tool-approvals.json.
func newGuard(cfg *config.Config, mgr *upstream.Manager, log *zap.Logger, next func(string, []config.Tool)) *integrity.Guard {
	return integrity.New(mgr, integrity.NewStore(config.ExpandHome(cfg.DataDir)), integrity.Options{
		Quarantine:     cfg.Quarantined,
		OnToolsChanged: next,
		Logger:         log.Named("integrity"),
	})
}

// startGuard starts the guard's poll of the approvals file, so an approval
// takes effect in this running proxy within a second. It is stopped by
// stopGuardPoll. Calling it twice does nothing.
func (s *stack) startGuard() {
	if s.stopGuard != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopGuard, s.guardDone = cancel, make(chan struct{})
	go func() {
		defer close(s.guardDone)
		s.guard.Run(ctx)
	}()
}

func (s *stack) stopGuardPoll() {
	if s.stopGuard != nil {
		s.stopGuard()
		<-s.guardDone
	}
}
