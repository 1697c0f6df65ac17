package sdklog

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/redact"
)

// resolved is a slog.LogValuer, resolved before logging.
type resolved struct{}

func (resolved) LogValue() slog.Value { return slog.StringValue("resolved") }

// TestDemotes: mcp-go's lines reach zap one level lower (errors as
// warnings, the rest as debug), named as the logger handed in, marked
// source=mcp-go, with resolved values and no stack.
func TestDemotes(t *testing.T) {
	tests := []struct {
		in   slog.Level
		want zapcore.Level
	}{
		{slog.LevelDebug, zapcore.DebugLevel},
		{slog.LevelInfo, zapcore.DebugLevel},
		{slog.LevelWarn, zapcore.DebugLevel},
		{slog.LevelError, zapcore.WarnLevel},
	}
	for _, tc := range tests {
		t.Run(tc.in.String(), func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			New(zap.New(core).Named("upstream"), true).With("session", "s1").Log(t.Context(), tc.in, "m", "value", resolved{})
			if logs.Len() != 1 {
				t.Fatalf("got %d entries, want 1", logs.Len())
			}
			e := logs.All()[0]
			if e.Level != tc.want || e.LoggerName != "upstream" || e.Stack != "" {
				t.Errorf("got level %v, logger %q, stack %q; want %v, upstream, none", e.Level, e.LoggerName, e.Stack, tc.want)
			}
			want := map[string]any{"source": "mcp-go", "session": "s1", "value": "resolved"}
			if diff := cmp.Diff(want, e.ContextMap()); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnabledFollowsZap: what zap's level drops is dropped at the
// demoted level, before mcp-go formats anything.
func TestEnabledFollowsZap(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := New(zap.New(core), true)
	if l.Enabled(t.Context(), slog.LevelWarn) {
		t.Error("a warning (debug once demoted) is enabled past a warn-level logger")
	}
	l.Info("chatter")
	l.Error("retrying")
	if logs.Len() != 1 || logs.All()[0].Message != "retrying" {
		t.Errorf("got %v, want only the demoted error (a warning) past a warn-level logger", logs.All())
	}
}

// TestRedacts: a secret in what mcp-go logs (an error carrying a
// tokened URL) is masked by the process's redacting core.
func TestRedacts(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	core, logs := observer.New(zapcore.DebugLevel)
	log := redact.Logger(zap.New(core), redact.New(redact.Options{Literals: []string{secret}, URLs: true}))
	New(log, true).Error("listening failed "+secret, "error", errors.New("GET https://up.example/sse?token="+secret+": EOF"))
	if logs.Len() != 1 {
		t.Fatalf("got %d entries, want 1", logs.Len())
	}
	e := logs.All()[0]
	if strings.Contains(e.Message, secret) || strings.Contains(e.ContextMap()["error"].(string), secret) {
		t.Errorf("got %q %v, want the secret masked", e.Message, e.ContextMap())
	}
}

// TestKeepsLevels: mcp-go's HTTP transport lines reach zap at
// slog's own levels, named as the logger handed in, marked source=mcp-go,
// with no stack.
func TestKeepsLevels(t *testing.T) {
	tests := []struct {
		in   slog.Level
		want zapcore.Level
	}{
		{slog.LevelDebug, zapcore.DebugLevel},
		{slog.LevelInfo, zapcore.InfoLevel},
		{slog.LevelWarn, zapcore.WarnLevel},
		{slog.LevelError, zapcore.ErrorLevel},
	}
	for _, tc := range tests {
		t.Run(tc.in.String(), func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			New(zap.New(core).Named("http"), false).Log(t.Context(), tc.in, "m", "session", "s1")
			if logs.Len() != 1 {
				t.Fatalf("got %d entries, want 1", logs.Len())
			}
			e := logs.All()[0]
			if e.Level != tc.want || e.LoggerName != "http" || e.Stack != "" {
				t.Errorf("got level %v, logger %q, stack %q; want %v, http, none", e.Level, e.LoggerName, e.Stack, tc.want)
			}
			if diff := cmp.Diff(map[string]any{"source": "mcp-go", "session": "s1"}, e.ContextMap()); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}
