package worker

import (
	"context"

	"github.com/cuzk/cuzk/prover"
	"github.com/cuzk/cuzk/synth"
)

// WithoutEviction is the context a preload loads keys under (tests only).
func WithoutEviction(ctx context.Context) context.Context {
	return context.WithValue(ctx, noEviction{}, true)
}

// HeldBytes is what a worker proving on b (the CPU when nil) holds in its budget for
// circuit c beside its syntheses: the compiled circuit and the proving key's host copy
// with b's buffers for it (tests only).
func HeldBytes(c *synth.Compiled, b prover.Backend) int64 {
	if b == nil {
		b = prover.NewCPU()
	}
	cat := &catalog{backends: []prover.Backend{b}}
	return c.HeldBytes() + cat.keyHostBytes(c)
}

// KindBytes is what reservations of kind hold now and held at most (tests only).
func (b *Budget) KindBytes(kind string) (now, peak int64) {
	for _, k := range b.Kinds() {
		if k.Kind == kind {
			return k.Bytes, k.Peak
		}
	}
	return 0, 0
}

// HoldSynthSlots takes every synthesis slot (--synth-concurrency) until release is
// called, as solves of other requests would (tests only).
func (w *Worker) HoldSynthSlots() (release func()) {
	for range cap(w.synthSem) {
		w.synthSem <- struct{}{}
	}
	return func() {
		for range cap(w.synthSem) {
			<-w.synthSem
		}
	}
}

// CountIn makes cat, made by NewCatalogWith, count what it holds in b as a worker's
// catalog does (tests only).
func CountIn(cat Catalog, b *Budget) { cat.(*catalog).useBudget(b, nil) }

// SweepAfter makes the worker of c collect garbage once its proven solutions reach n
// bytes, instead of a sixteenth of its budget (tests only).
func SweepAfter(c *Config, n int64) { c.sweepBytes = n }
