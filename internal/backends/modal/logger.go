package modal

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger handed to the SDK: the backend's, without the
// SDK's debug records, which name every exec's command line.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(levelFloor{Handler: l.Handler(), min: slog.LevelInfo})
}

// levelFloor drops records below min.
type levelFloor struct {
	slog.Handler
	min slog.Level
}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelFloor) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelFloor{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h levelFloor) WithGroup(name string) slog.Handler {
	return levelFloor{Handler: h.Handler.WithGroup(name), min: h.min}
}
