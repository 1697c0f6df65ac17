// Package sdklog routes mcp-go's slog output into the process's zap logs:
// zap's own slog bridge over a zap core, so mcp-go's lines go where
// mcproxy's go (never stdout) and pass its redaction.
package sdklog

import (
	"log/slog"
	"math"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// New is the slog.Logger handed to mcp-go: every line is written into
// log's core under log's name and carries source=mcp-go. No stack traces:
// mcp-go's own frames say nothing to an operator. With demote, every line
// is one level lower (errors as warnings, the rest as debug), for callers
// that report the state mcp-go complains about themselves (the upstream
// manager reports connections).
func New(log *zap.Logger, demote bool) *slog.Logger {
	core := log.Core()
	if demote {
		core = demoted{core}
	}
	h := zapslog.NewHandler(core, zapslog.WithName(log.Name()), zapslog.AddStacktraceAt(slog.Level(math.MaxInt)))
	return slog.New(h).With("source", "mcp-go")
}

// demoted lowers every entry of its core: errors become warnings and the
// rest debug.
type demoted struct{ zapcore.Core }

func lower(l zapcore.Level) zapcore.Level {
	if l >= zapcore.ErrorLevel {
		return zapcore.WarnLevel
	}
	return zapcore.DebugLevel
}

func (c demoted) Enabled(l zapcore.Level) bool { return c.Core.Enabled(lower(l)) }

func (c demoted) With(fields []zapcore.Field) zapcore.Core { return demoted{c.Core.With(fields)} }

// Check hands the demoted entry to the wrapped core, which adds itself.
func (c demoted) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	e.Level = lower(e.Level)
	return c.Core.Check(e, ce)
}

func (c demoted) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Level = lower(e.Level)
	return c.Core.Write(e, fields)
}
