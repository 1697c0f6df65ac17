// Package zapslog routes log/slog records into a *zap.Logger. mcp-go logs
// through slog; with this bridge what it says lands wherever cmd/mcproxy
// sent the process's logs, never on stdout. It is the one bridge: the
// front's HTTP transports and the upstream clients both use it, each with
// the level policy it states in Options.
package zapslog

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options tune New. The zero value keeps slog's levels and adds no field.
type Options struct {
	// Source, when set, is added to every record as the field "source"
	// (say "mcp-go"), so a reader can tell the library's lines apart.
	Source string
	// Demote lowers every record: errors become warnings and everything
	// else debug. For a library whose errors are warnings to us (the
	// upstream manager reports connection state itself, so mcp-go's
	// "error" about a listener retrying is not one).
	Demote bool
}

// New returns a slog.Logger writing to l. Groups qualify attribute keys
// ("group.key"), as slog's own handlers do; attribute values are resolved
// (slog.LogValuer) before they are logged.
func New(l *zap.Logger, opts Options) *slog.Logger {
	h := &handler{log: l, demote: opts.Demote}
	if opts.Source != "" {
		h.attrs = []zap.Field{zap.String("source", opts.Source)}
	}
	return slog.New(h)
}

type handler struct {
	log    *zap.Logger
	demote bool
	attrs  []zap.Field
	group  string // dotted prefix of the keys of attributes added from now on
}

func (h *handler) level(l slog.Level) zapcore.Level {
	if h.demote {
		if l >= slog.LevelError {
			return zapcore.WarnLevel
		}
		return zapcore.DebugLevel
	}
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(h.level(l))
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	ce := h.log.Check(h.level(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, len(h.attrs)+r.NumAttrs())
	fields = append(fields, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *handler) field(a slog.Attr) zap.Field {
	key := a.Key
	if h.group != "" {
		key = h.group + "." + key
	}
	return zap.Any(key, a.Value.Resolve().Any())
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(make([]zap.Field, 0, len(h.attrs)+len(attrs)), h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.field(a))
	}
	return &n
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	if n.group != "" {
		name = n.group + "." + name
	}
	n.group = name
	return &n
}
