package worker

import (
	"context"
	"log/slog"
	"strings"
)

// cancelAsInfo logs River's "job cancelled remotely" at Info rather than Warn: a
// cancel is an operator's request (cuzk.cancel_proof), not a fault.
type cancelAsInfo struct{ slog.Handler }

func (h cancelAsInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasSuffix(r.Message, "job cancelled remotely") {
		if !h.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
		r.Level = slog.LevelInfo
	}
	return h.Handler.Handle(ctx, r)
}

func (h cancelAsInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return cancelAsInfo{h.Handler.WithAttrs(attrs)}
}

func (h cancelAsInfo) WithGroup(name string) slog.Handler {
	return cancelAsInfo{h.Handler.WithGroup(name)}
}
