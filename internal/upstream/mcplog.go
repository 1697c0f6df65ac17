package upstream

import (
	"log/slog"
	"math"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// mcpGoLog is the slog.Logger handed to mcp-go's client transports: zap's
// own slog bridge writing into log's core, so mcp-go's lines go where the
// process's logs go (never stdout) and pass its redaction. Every line
// carries source=mcp-go and is demoted: what mcp-go calls an error (a
// listener retrying) is a warning here, since the manager reports
// connection state itself. No stack traces: mcp-go's own frames say
// nothing to an operator.
func mcpGoLog(log *zap.Logger) *slog.Logger {
	h := zapslog.NewHandler(demoted{log.Core()}, zapslog.WithName(log.Name()), zapslog.AddStacktraceAt(slog.Level(math.MaxInt)))
	return slog.New(h).With("source", "mcp-go")
}

// demoted lowers every entry of its core: errors become warnings and the
// rest debug.
type demoted struct{ zapcore.Core }

func demote(l zapcore.Level) zapcore.Level {
	if l >= zapcore.ErrorLevel {
		return zapcore.WarnLevel
	}
	return zapcore.DebugLevel
}

func (c demoted) Enabled(l zapcore.Level) bool { return c.Core.Enabled(demote(l)) }

func (c demoted) With(fields []zapcore.Field) zapcore.Core { return demoted{c.Core.With(fields)} }

// Check hands the demoted entry to the wrapped core, which adds itself.
func (c demoted) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	e.Level = demote(e.Level)
	return c.Core.Check(e, ce)
}

func (c demoted) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Level = demote(e.Level)
	return c.Core.Write(e, fields)
}
