package main

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/activity"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/session"
)

// newDashboard serves /status and the web page of a serving stack. managers
// are the running session managers (MCP clients', the gateway's; nil ones
// are skipped), whose live message counts and sessions that cannot record
// /status shows. It shows obs's call history, the last refused reload
// (refused), and with gateway set the gateway's figures.
// who names a session's client and token (whoIn: the default front's, then
// the profiles').
func newDashboard(cfg *config.Config, st *stack, started time.Time, log *zap.Logger, obs *observers, refused func() *dashboard.RefusedReload, gateway bool, who func(id string) (client, token string), managers ...*session.Manager) http.Handler {
	src := dashboard.Source{
		Servers:       st.mgr.Status,
		Tools:         st.mgr.Tools,
		IndexSize:     st.ix.Count,
		RefusedReload: refused,
		Version:       versionString(),
		Started:       started,
	}
	if obs.history != nil {
		src.Calls = func(n int) []activity.Entry { return obs.history.Recent(activity.Filter{}, n) }
		src.CallSummary = obs.history.Summary
	}
	if gateway {
		src.Gateway = obs.metrics.GatewayTotals
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
				return withManagers(out, managers, who), err
			}
		}
	}
	return dashboard.New(src, log.Named("dashboard"))
}

// withManagers adds to list what managers (nil ones skipped) know and the
// files do not: the message counts of the sessions open now (state.json
// lags behind a session in use, issue 30), and the sessions whose recording
// fails (issue 26). A session open or failing with nothing on disk yet (its
// directory could not be created) is added by id. Each session is named by
// its client and the client's token.
func withManagers(list []dashboard.Session, managers []*session.Manager, who func(id string) (client, token string)) []dashboard.Session {
	at := make(map[string]int, len(list))
	for i, s := range list {
		at[s.ID] = i
	}
	find := func(id string, since time.Time) *dashboard.Session {
		i, ok := at[id]
		if !ok {
			at[id], i = len(list), len(list)
			list = append(list, dashboard.Session{ID: id, LastActive: since})
		}
		return &list[i]
	}
	for _, m := range managers {
		if m == nil {
			continue
		}
		for id, l := range m.Live() {
			find(id, time.Now()).Messages = l.Messages
		}
		for id, r := range m.Failing() {
			find(id, r.Since).Recording = &dashboard.Recording{State: dashboard.RecordingFailing, LastError: r.Err, Since: r.Since}
		}
	}
	for i := range list {
		list[i].Client, list[i].Token = who(list[i].ID)
	}
	return list
}

// whoIn names session id's client and token from the first of the fronts
// that knows the session (the default front, then each profile's view).
func whoIn(fronts func() []*server.Server) func(id string) (client, token string) {
	return func(id string) (string, string) {
		for _, f := range fronts() {
			if c, t := f.ClientName(id), f.ClientToken(id); c != "" || t != "" {
				return c, t
			}
		}
		return "", ""
	}
}
