// Package tracing exports OpenTelemetry traces of mcproxy's tool calls
// (issue 30): one span per call through the proxy to an upstream, with the
// server, tool, client session and outcome, sent over OTLP/HTTP by the
// official Go SDK's batching exporter, off the call path. It is off unless
// config tracing.endpoint names a collector. Error texts are masked by
// Options.Mask before they go into a span; arguments and results never do.
// It uses a TracerProvider of its own, never the global one.
package tracing

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Tracer.
type Options struct {
	// URL is where spans are posted (config TracingConfig.TracesURL).
	// Required.
	URL string
	// Version is mcproxy's, the service.version of every span.
	Version string
	// Mask masks secrets in error texts; nil leaves them as they are.
	Mask func(string) string
}

// Call is one tool call as a span records it.
type Call struct {
	Start           time.Time
	Duration        time.Duration
	Server, Tool    string
	Session, Client string
	// Error is "" for a call that succeeded.
	Error string
}

// Tracer exports spans. Its methods are safe for concurrent use; a nil
// *Tracer exports nothing.
type Tracer struct {
	tp   *sdktrace.TracerProvider
	tr   trace.Tracer
	mask func(string) string
}

// New starts a Tracer exporting to opts.URL. Nothing is sent until the
// first span.
func New(opts Options) (*Tracer, error) {
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(opts.URL))
	if err != nil {
		return nil, fmt.Errorf("tracing.endpoint: starting the OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("mcproxy"), semconv.ServiceVersion(opts.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	mask := opts.Mask
	if mask == nil {
		mask = func(s string) string { return s }
	}
	return &Tracer{tp: tp, tr: tp.Tracer("github.com/mcproxy/mcproxy"), mask: mask}, nil
}

// Call records c as one span, timed as the call was.
func (t *Tracer) Call(c Call) {
	if t == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", c.Tool),
		attribute.String("mcproxy.server", c.Server),
	}
	if c.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", c.Session))
	}
	if c.Client != "" {
		attrs = append(attrs, attribute.String("mcproxy.client.name", c.Client))
	}
	_, span := t.tr.Start(context.Background(), "tools/call "+c.Server+":"+c.Tool,
		trace.WithTimestamp(c.Start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if c.Error != "" {
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, t.mask(c.Error))
	}
	span.End(trace.WithTimestamp(c.Start.Add(c.Duration)))
}

// Close exports the spans still queued, within ctx, and stops.
func (t *Tracer) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("exporting the last spans to tracing.endpoint: %w", err)
	}
	return nil
}
