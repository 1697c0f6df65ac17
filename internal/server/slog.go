package server

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newSlog routes mcp-go's slog output into our zap logger, so only
// cmd/mcproxy decides where logs go.
func newSlog(l *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{l: l})
}

type zapHandler struct {
	l      *zap.Logger
	fields []zap.Field
}

func (h *zapHandler) Enabled(_ context.Context, level slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(level))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, len(h.fields)+r.NumAttrs())
	fields = append(fields, h.fields...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if ce := h.l.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := append([]zap.Field(nil), h.fields...)
	for _, a := range attrs {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
	}
	return &zapHandler{l: h.l, fields: fields}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	return &zapHandler{l: h.l.Named(name), fields: h.fields}
}

func zapLevel(l slog.Level) zapcore.Level {
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
