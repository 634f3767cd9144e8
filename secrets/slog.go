package secrets

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler wraps h so that no record it writes shows a secret of m: the
// message and every attribute's value (strings, errors, anything printed)
// are masked. With a nil m it returns h.
func Handler(h slog.Handler, m *Masker) slog.Handler {
	if m == nil {
		return h
	}
	return &handler{h: h, m: m}
}

type handler struct {
	h slog.Handler
	m *Masker
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.m.Mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(masked), m: h.m}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), m: h.m}
}

// attr masks one attribute, groups included.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.m.Mask(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		// A value that shows no secret keeps its kind (a list stays a
		// list in JSON logs).
		text := fmt.Sprint(v.Any())
		if masked := h.m.Mask(text); masked != text {
			return slog.String(a.Key, masked)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
