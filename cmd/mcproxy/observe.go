package main

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/activity"
	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/metrics"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/tracing"
)

// observers are what a serving mcproxy tells of each tool call (issue 30):
// the metrics, the call history (nil when activity is off) and the tracer
// (nil when tracing is off).
type observers struct {
	metrics *metrics.Metrics
	history *activity.Log
	tracer  *tracing.Tracer
	log     *zap.Logger
}

// newObservers opens what cfg asks for; upstreams reports the servers'
// states at scrape time.
func newObservers(cfg *config.Config, log *zap.Logger, upstreams func() []metrics.Upstream) (*observers, error) {
	o := &observers{metrics: metrics.New(metrics.Options{Upstreams: upstreams}), log: log}
	var err error
	if o.history, err = openActivity(cfg, log); err != nil {
		return nil, err
	}
	if cfg.Tracing.Enabled() {
		// The SDK reports export failures through its global handler.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("exporting traces", zap.Error(err)) }))
		if o.tracer, err = tracing.New(tracing.Options{URL: cfg.Tracing.TracesURL(), Version: versionString(), Mask: redactor(cfg, true).String}); err != nil {
			o.close()
			return nil, err
		}
		log.Info("exporting traces of tool calls", zap.String("endpoint", cfg.Tracing.TracesURL()))
	}
	return o, nil
}

// call is server.Deps.OnCall.
func (o *observers) call(c server.Call) {
	server, tool := c.Server, c.Tool
	if !c.Known {
		server, tool = metrics.Unknown, metrics.Unknown
	}
	o.metrics.Call(server, tool, c.Error == "", c.Duration)
	o.metrics.CallBy(clientauth.Identity{Token: c.Token, Admin: c.Admin}.Label(), c.Error == "")
	if o.history != nil {
		o.history.Add(activityEntry(c))
	}
	o.tracer.Call(tracing.Call{Start: c.Time, Duration: c.Duration, Server: c.Server, Tool: c.Tool,
		Session: c.Session, Client: c.Client, Error: c.Error})
}

// close writes the history's queue and exports the last spans. It runs
// after the stack has stopped, so the calls answered meanwhile are kept.
func (o *observers) close() {
	if o.history != nil {
		if err := o.history.Close(); err != nil {
			o.log.Warn("closing the call history", zap.Error(err))
		}
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 5*time.Second,
		errors.New("the OTLP collector took over 5s to take the last spans"))
	defer cancel()
	if err := o.tracer.Close(ctx); err != nil {
		o.log.Warn("closing the tracer", zap.Error(err))
	}
}
