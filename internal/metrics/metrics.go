// Package metrics owns mcproxy's Prometheus metrics: tool calls through the
// proxy by server, tool and outcome, their latency, the upstreams' states,
// and the model gateway's requests, input tokens and hidden rounds. Each
// Metrics has a registry of its own, never the global default, so that two
// in one process (tests running in parallel) do not share counts. It also
// keeps the gateway's running totals for the dashboard, so the page and
// /metrics read the same numbers. It records what it is told and does no
// I/O beyond serving its handler; the HTTP guard around /metrics (Host,
// Origin, auth_token) is the front's.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the front serves the metrics.
const Path = "/metrics"

// Outcomes of a tool call.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// Unknown is the server and tool label of a call to a tool no server has:
// the names came from the model, and labelling with them would let any
// client grow the series without bound.
const Unknown = "(unknown)"

// States is every upstream state the mcproxy_upstream_state gauge reports
// (upstream.State values), so a server's series are there at 0 before it
// first enters one.
var States = []string{"connecting", "ready", "down", "disabled", "needs sign-in"}

// Upstream is one configured server's current state.
type Upstream struct {
	Server string
	State  string
}

// Options configure Metrics.
type Options struct {
	// Upstreams reports every configured server's state at scrape time;
	// nil leaves mcproxy_upstream_state out.
	Upstreams func() []Upstream
}

// Metrics holds the registry and its collectors. Its methods are safe for
// concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg          *prometheus.Registry
	calls        *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	byToken      *prometheus.CounterVec
	gwRequests   *prometheus.CounterVec
	gwTokens     *prometheus.CounterVec
	gwUsage      *prometheus.CounterVec
	gwHidden     prometheus.Counter
	mu           sync.Mutex
	gatewayTotal Gateway
}

// New builds Metrics with a fresh registry.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcproxy_tool_calls_total",
			Help: "Tool calls through the proxy to an upstream, by server, tool and outcome (ok, or error: a tool error result or a failed call).",
		}, []string{"server", "tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcproxy_tool_call_duration_seconds",
			Help: "How long tool calls through the proxy took, from reaching the upstream manager to its answer.",
			// From a local stdio tool (milliseconds) to a slow remote one.
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server", "tool"}),
		byToken: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcproxy_tool_calls_by_token_total",
			Help: "Tool calls through the proxy by the client token that made them (its name, never its value; (admin) for auth_token, (anonymous) without a credential) and outcome.",
		}, []string{"token", "outcome"}),
		gwRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcproxy_gateway_requests_total",
			Help: "Model requests the gateway served, by API (anthropic, openai).",
		}, []string{"api"}),
		gwTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcproxy_gateway_input_tokens_total",
			Help: "Input tokens of projected model requests, as mcproxy counts them: kind=client is what the client's requests held (going straight), kind=forwarded what the gateway sent over every round, hidden ones included.",
		}, []string{"kind"}),
		gwUsage: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcproxy_gateway_usage_tokens_total",
			Help: "Input tokens the provider reported in its usage over every round: kind=input (uncached), cache_read, cache_write.",
		}, []string{"kind"}),
		gwHidden: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcproxy_gateway_hidden_rounds_total",
			Help: "Rounds the gateway ran without the client seeing them (the model's Compress and read_archive calls answered in place).",
		}),
	}
	m.reg.MustRegister(m.calls, m.latency, m.byToken, m.gwRequests, m.gwTokens, m.gwUsage, m.gwHidden,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opts.Upstreams != nil {
		m.reg.MustRegister(&upstreamStates{list: opts.Upstreams})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry, for tests that gather it directly.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Call records one tool call; server and tool are Unknown for a tool no
// server has.
func (m *Metrics) Call(server, tool string, ok bool, d time.Duration) {
	if m == nil {
		return
	}
	outcome := OutcomeOK
	if !ok {
		outcome = OutcomeError
	}
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.latency.WithLabelValues(server, tool).Observe(d.Seconds())
}

// CallBy counts one tool call by the caller that made it: a client
// token's name, or a fixed label for a caller that is none (the caller's
// to choose: the names are bounded by the tokens that exist, never taken
// from a request).
func (m *Metrics) CallBy(token string, ok bool) {
	if m == nil {
		return
	}
	outcome := OutcomeOK
	if !ok {
		outcome = OutcomeError
	}
	m.byToken.WithLabelValues(token, outcome).Inc()
}

// Gateway is the gateway's figures: one request's, or the totals since
// start (GatewayTotals).
type Gateway struct {
	Requests int64 `json:"requests"`
	// Projected counts the requests whose tokens were counted (taken
	// through noa); the others were forwarded as they came.
	Projected int64 `json:"projected"`
	// ClientTokens is what the client's requests held; ForwardedTokens
	// what was sent upstream over every round (mcproxy's count).
	ClientTokens    int64 `json:"client_tokens"`
	ForwardedTokens int64 `json:"forwarded_tokens"`
	HiddenRounds    int64 `json:"hidden_rounds"`
	// Usage the provider reported, summed over rounds.
	UsageInput      int64 `json:"usage_input_tokens"`
	UsageCacheRead  int64 `json:"usage_cache_read_tokens"`
	UsageCacheWrite int64 `json:"usage_cache_write_tokens"`
}

// GatewayRequest records one model request the gateway served; api is
// "anthropic" or "openai".
func (m *Metrics) GatewayRequest(api string, g Gateway) {
	if m == nil {
		return
	}
	m.gwRequests.WithLabelValues(api).Inc()
	m.gwTokens.WithLabelValues("client").Add(float64(g.ClientTokens))
	m.gwTokens.WithLabelValues("forwarded").Add(float64(g.ForwardedTokens))
	m.gwUsage.WithLabelValues("input").Add(float64(g.UsageInput))
	m.gwUsage.WithLabelValues("cache_read").Add(float64(g.UsageCacheRead))
	m.gwUsage.WithLabelValues("cache_write").Add(float64(g.UsageCacheWrite))
	m.gwHidden.Add(float64(g.HiddenRounds))
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &m.gatewayTotal
	t.Requests++
	t.Projected += g.Projected
	t.ClientTokens += g.ClientTokens
	t.ForwardedTokens += g.ForwardedTokens
	t.HiddenRounds += g.HiddenRounds
	t.UsageInput += g.UsageInput
	t.UsageCacheRead += g.UsageCacheRead
	t.UsageCacheWrite += g.UsageCacheWrite
}

// GatewayTotals is the gateway's figures since start.
func (m *Metrics) GatewayTotals() Gateway {
	if m == nil {
		return Gateway{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gatewayTotal
}

// upstreamStates reports mcproxy_upstream_state at scrape time: 1 for each
// server's current state, 0 for the others.
type upstreamStates struct {
	list func() []Upstream
}

var upstreamStateDesc = prometheus.NewDesc("mcproxy_upstream_state",
	"Each configured upstream's state: 1 for the state it is in, 0 for the others.", []string{"server", "state"}, nil)

func (u *upstreamStates) Describe(ch chan<- *prometheus.Desc) { ch <- upstreamStateDesc }

func (u *upstreamStates) Collect(ch chan<- prometheus.Metric) {
	for _, s := range u.list() {
		for _, st := range States {
			v := 0.0
			if st == s.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upstreamStateDesc, prometheus.GaugeValue, v, s.Server, st)
		}
	}
}
