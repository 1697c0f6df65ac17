package redact

import (
	"encoding/json"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Core wraps c so that every entry's message and fields pass through r
// before they are written: a secret in an error (an upstream URL with its
// token inside a *url.Error, say) never reaches the log, whichever package
// logged it (mcp-go's slog output included, through zap's zapslog
// handler). A nil r returns c unchanged.
func Core(c zapcore.Core, r *Redactor) zapcore.Core {
	if r == nil {
		return c
	}
	return &core{Core: c, r: r}
}

type core struct {
	zapcore.Core
	r *Redactor
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{Core: c.Core.With(c.fields(fields)), r: c.r}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = c.r.String(e.Message)
	return c.Core.Write(e, c.fields(fields))
}

// fields returns fields with secrets masked; a field is replaced (by a
// string field of the same key) only when masking changed it.
func (c *core) fields(fields []zapcore.Field) []zapcore.Field {
	var out []zapcore.Field
	for i, f := range fields {
		g, changed := c.field(f)
		if !changed {
			if out != nil {
				out = append(out, f)
			}
			continue
		}
		if out == nil {
			out = make([]zapcore.Field, i, len(fields))
			copy(out, fields[:i])
		}
		out = append(out, g)
	}
	if out == nil {
		return fields
	}
	return out
}

func (c *core) field(f zapcore.Field) (zapcore.Field, bool) {
	switch f.Type {
	case zapcore.StringType:
		if m := c.r.String(f.String); m != f.String {
			f.String = m
			return f, true
		}
		return f, false
	case zapcore.BoolType, zapcore.DurationType, zapcore.Float64Type, zapcore.Float32Type,
		zapcore.Int64Type, zapcore.Int32Type, zapcore.Int16Type, zapcore.Int8Type,
		zapcore.Uint64Type, zapcore.Uint32Type, zapcore.Uint16Type, zapcore.Uint8Type,
		zapcore.UintptrType, zapcore.TimeType, zapcore.TimeFullType, zapcore.SkipType, zapcore.NamespaceType:
		return f, false
	}
	// Anything else (errors, stringers, arrays, objects, reflected values):
	// render it as the encoder would and mask the rendering.
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	var text string
	switch v := enc.Fields[f.Key].(type) {
	case string:
		text = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			text = fmt.Sprint(v)
		} else {
			text = string(b)
		}
	}
	if m := c.r.String(text); m != text {
		return zap.String(f.Key, m), true
	}
	return f, false
}

// Logger returns log with every entry passed through r (log itself when r
// is nil).
func Logger(log *zap.Logger, r *Redactor) *zap.Logger {
	if r == nil {
		return log
	}
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return Core(c, r) }))
}
