package main

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"
	"k8s.io/klog/v2"
)

// newLogger logs to w: with tint's coloured text on a terminal, JSON otherwise,
// unless format says which. Verbosity 1 and more turns on Debug; below 0
// only warnings and errors are logged.
func newLogger(w io.Writer, format string, verbosity int) *slog.Logger {
	level := slog.LevelInfo
	switch {
	case verbosity > 0:
		level = slog.LevelDebug
	case verbosity < 0:
		level = slog.LevelWarn
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	if format == "" {
		format = "json"
		if tty {
			format = "text"
		}
	}
	var h slog.Handler
	if format == "text" {
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !tty})
	} else {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)
	// client-go logs through klog; send it to the same place.
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log
}
