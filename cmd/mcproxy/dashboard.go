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

// newDashboard serves /status and the web page of a serving stack. managers
// are the running session managers (MCP clients', the gateway's; nil ones
// are skipped), whose sessions that cannot record /status shows.
func newDashboard(cfg *config.Config, st *stack, started time.Time, log *zap.Logger, managers ...*session.Manager) http.Handler {
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
				return withRecording(out, managers), err
			}
		}
	}
	return dashboard.New(src, log.Named("dashboard"))
}

// withRecording marks the sessions of list whose recording fails in one of
// managers (issue 26); a failing session with nothing on disk yet (its
// directory could not be created) is added by id.
func withRecording(list []dashboard.Session, managers []*session.Manager) []dashboard.Session {
	at := make(map[string]int, len(list))
	for i, s := range list {
		at[s.ID] = i
	}
	for _, m := range managers {
		if m == nil {
			continue
		}
		for id, r := range m.Failing() {
			rec := &dashboard.Recording{State: dashboard.RecordingFailing, LastError: r.Err, Since: r.Since}
			if i, ok := at[id]; ok {
				list[i].Recording = rec
				continue
			}
			at[id] = len(list)
			list = append(list, dashboard.Session{ID: id, LastActive: r.Since, Recording: rec})
		}
	}
	return list
}
