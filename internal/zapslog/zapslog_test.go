package zapslog

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// stringer is a slog.LogValuer, resolved before logging.
type secretless struct{}

func (secretless) LogValue() slog.Value { return slog.StringValue("resolved") }

func TestLevels(t *testing.T) {
	tests := []struct {
		name   string
		demote bool
		in     slog.Level
		want   zapcore.Level
	}{
		{"debug", false, slog.LevelDebug, zapcore.DebugLevel},
		{"info", false, slog.LevelInfo, zapcore.InfoLevel},
		{"warn", false, slog.LevelWarn, zapcore.WarnLevel},
		{"error", false, slog.LevelError, zapcore.ErrorLevel},
		{"demoted info", true, slog.LevelInfo, zapcore.DebugLevel},
		{"demoted warn", true, slog.LevelWarn, zapcore.DebugLevel},
		{"demoted error", true, slog.LevelError, zapcore.WarnLevel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			New(zap.New(core), Options{Demote: tc.demote}).Log(t.Context(), tc.in, "m")
			if logs.Len() != 1 || logs.All()[0].Level != tc.want {
				t.Fatalf("got %v, want one entry at %v", logs.All(), tc.want)
			}
		})
	}
}

func TestEnabledFollowsZap(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := New(zap.New(core), Options{Demote: true})
	l.Info("chatter")
	l.Error("retrying")
	if logs.Len() != 1 || logs.All()[0].Message != "retrying" {
		t.Errorf("got %v, want only the demoted error (a warning) past a warn-level logger", logs.All())
	}
}

func TestFields(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core), Options{Source: "mcp-go"}).With("session", "s1").WithGroup("req").With("id", 7)
	l.Info("got", "value", secretless{})
	want := map[string]any{"source": "mcp-go", "session": "s1", "req.id": int64(7), "req.value": "resolved"}
	if diff := cmp.Diff(want, logs.All()[0].ContextMap()); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}
