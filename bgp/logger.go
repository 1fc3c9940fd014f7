package bgp

import (
	"context"
	"log/slog"

	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
)

// gobgpLogger hands gobgp's log lines to slog. gobgp's Info is chatty per
// peer event, so it is logged at Debug; its Fatal and Panic never exit here.
type gobgpLogger struct{ log *slog.Logger }

func (l gobgpLogger) emit(level slog.Level, msg string, fields gobgplog.Fields) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		attrs = append(attrs, k, v)
	}
	l.log.Log(context.Background(), level, msg, attrs...)
}

func (l gobgpLogger) Panic(msg string, f gobgplog.Fields) { l.emit(slog.LevelError, msg, f) }
func (l gobgpLogger) Fatal(msg string, f gobgplog.Fields) { l.emit(slog.LevelError, msg, f) }
func (l gobgpLogger) Error(msg string, f gobgplog.Fields) { l.emit(slog.LevelError, msg, f) }
func (l gobgpLogger) Warn(msg string, f gobgplog.Fields)  { l.emit(slog.LevelWarn, msg, f) }
func (l gobgpLogger) Info(msg string, f gobgplog.Fields)  { l.emit(slog.LevelDebug, msg, f) }
func (l gobgpLogger) Debug(msg string, f gobgplog.Fields) { l.emit(slog.LevelDebug-4, msg, f) }
func (l gobgpLogger) SetLevel(gobgplog.LogLevel)          {}
func (l gobgpLogger) GetLevel() gobgplog.LogLevel {
	if l.log.Enabled(context.Background(), slog.LevelDebug-4) {
		return gobgplog.DebugLevel
	}
	return gobgplog.InfoLevel
}
