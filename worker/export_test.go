package worker

import "context"

// WithoutEviction is the context a preload loads keys under (tests only).
func WithoutEviction(ctx context.Context) context.Context {
	return context.WithValue(ctx, noEviction{}, true)
}
