package server

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestMCPGoLogKeepsLevels: mcp-go's HTTP transport lines reach zap at
// slog's own levels, named as the logger handed in, marked source=mcp-go,
// with no stack.
func TestMCPGoLogKeepsLevels(t *testing.T) {
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
			mcpGoLog(zap.New(core).Named("http")).Log(t.Context(), tc.in, "m", "session", "s1")
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
