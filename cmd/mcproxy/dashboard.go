package main

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/session"
)

// newDashboard serves /status and the web page of a serving stack.
func newDashboard(cfg *config.Config, st *stack, started time.Time, log *zap.Logger) http.Handler {
	src := dashboard.Source{
		Servers:   st.mgr.Status,
		Tools:     st.mgr.Tools,
		IndexSize: st.ix.Count,
		Version:   versionString(),
		Started:   started,
	}
	if cfg.Mode != config.ModeDirect {
		src.Search = func(ctx context.Context, q string, limit int) ([]dashboard.Hit, error) {
			matches, err := st.front.Retrieve(ctx, q, limit)
			if err != nil {
				return nil, err
			}
			hits := make([]dashboard.Hit, len(matches))
			for i, m := range matches {
				hits[i] = dashboard.Hit{ID: m.Tool.ID, Server: m.Tool.Server, Name: m.Tool.Name, Description: m.Tool.Description, Score: m.Score}
			}
			return hits, nil
		}
	}
	if cfg.Noa.IsEnabled() {
		if opts, _, err := sessionOptions(cfg); err == nil {
			src.Sessions = func() ([]dashboard.Session, error) {
				list, err := session.List(opts)
				out := make([]dashboard.Session, len(list))
				for i, s := range list {
					out[i] = dashboard.Session{ID: s.ID, LastActive: s.LastActive, Messages: s.Messages, Blocks: s.Blocks,
						ActiveBlocks: s.ActiveBlocks, TokensSaved: s.TokensSaved, Bytes: s.Bytes}
				}
				return out, err
			}
		}
	}
	return dashboard.New(src, log.Named("dashboard"))
}
