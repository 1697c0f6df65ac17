package upstream

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogToZap routes mcp-go's slog output into our zap logger (which already
// carries the upstream field), so nothing the library logs reaches stdout and
// everything lands in one place. mcp-go's transport chatter is demoted one
// level: what it calls an error (a listener retrying) is a warning to us,
// since the manager reports connection state itself.
type slogToZap struct {
	log   *zap.Logger
	attrs []zap.Field
	group string
}

func newSlog(log *zap.Logger) *slog.Logger { return slog.New(&slogToZap{log: log}) }

func (h *slogToZap) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.WarnLevel
	default:
		return zapcore.DebugLevel
	}
}

func (h *slogToZap) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field{zap.String("source", "mcp-go")}, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *slogToZap) field(a slog.Attr) zap.Field {
	key := a.Key
	if h.group != "" {
		key = h.group + "." + key
	}
	return zap.Any(key, a.Value.Resolve().Any())
}

func (h *slogToZap) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]zap.Field(nil), h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.field(a))
	}
	return &n
}

func (h *slogToZap) WithGroup(name string) slog.Handler {
	n := *h
	if n.group != "" {
		name = n.group + "." + name
	}
	n.group = name
	return &n
}
