package worker

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Tiers a proving key is held in, fastest first: resident on a device (for the CPU
// backend, the prover's in-memory key), a host copy (an upload away from a device), or
// only its files (a read away: the page cache or the disk).
const (
	TierDevice = "device"
	TierPinned = "pinned"
	TierFile   = "file"
)

// KeyTier is where one circuit's proving key is held now.
type KeyTier struct {
	Circuit string
	// Tiers holds the tiers with a copy of the key, fastest first; TierFile is always
	// last (the files stay where they are).
	Tiers []string
	// Bytes is the memory of each tier's copy: for TierDevice the sum over Devices, for
	// TierPinned the host copy (counted in the memory budget), for TierFile what its
	// last read from the files brought into memory.
	Bytes map[string]int64
	// Devices holds the devices the key is resident on.
	Devices []string
	// Streamed is the bases that did not fit the devices, read from host memory by
	// each MSM (not in Bytes[TierDevice]).
	Streamed int64
	LastUsed time.Time // the last use on any device, or read; zero when never
}

// TierMove counts moves of circuits' keys between two tiers: loads (file to pinned,
// pinned to device) and evictions (device to pinned or file, pinned to file).
type TierMove struct {
	Circuit, From, To string
	Count             int64
}

// KeyTierReporter is implemented by a Catalog that reports its keys' tiers (for
// /readyz, the dashboard and metrics).
type KeyTierReporter interface {
	KeyTiers() []KeyTier
	TierMoves() []TierMove
	// HostKeyLimit is the most bytes the host copies may hold together (0: no limit
	// beyond the memory budget).
	HostKeyLimit() int64
}

// hostTier keeps the host copies of proving keys (the pinned tier): at most one per
// circuit, each reserved in the worker's memory budget (KindKey), together held under a limit.
// A copy is in use while a load reads it or a device key that proves from it lives
// (the CPU backend's; a prover.HostFreeKey, as the CUDA backend's, does not); when the
// tier is over its limit, the least recently used copy not in use is dropped (its key
// falls to the file tier), and when none is left, the least recently used device key
// not in use that holds one is evicted so that its copy can go.
type hostTier struct {
	mu     sync.Mutex
	limit  int64   // 0: none
	budget *Budget // nil: copies are not counted
	copies map[string]*hostCopy
	moves  map[[3]string]int64  // by circuit, from, to
	last   map[string]time.Time // a circuit's key's last use or load
	read   map[string]int64     // the bytes a circuit's key's last read brought into memory
	// freeDevice evicts the least recently used device key not in use, of a circuit
	// other than keep, so that its host copy can go; false when there is none (or ctx
	// forbids evictions). Called without mu held.
	freeDevice func(ctx context.Context, keep string) bool
	// ahead holds the reservations made for circuits' copies before their reads
	// (reserveAhead), nil while one is being made; admit takes them over.
	ahead map[string]*Reservation
}

type hostCopy struct {
	bytes   int64
	res     []*Reservation // none without a budget
	users   int
	lastUse time.Time
	drop    func() // forgets the copy, so that the next use reads the files again
}

func newHostTier(limit int64, freeDevice func(ctx context.Context, keep string) bool) *hostTier {
	return &hostTier{limit: limit, freeDevice: freeDevice, copies: map[string]*hostCopy{}, moves: map[[3]string]int64{},
		last: map[string]time.Time{}, read: map[string]int64{}, ahead: map[string]*Reservation{}}
}

// countIn makes later copies reserve their bytes in b; with no limit set, the tier's
// limit becomes half of b.
func (h *hostTier) countIn(b *Budget) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.budget = b
	if h.limit == 0 {
		h.limit = b.Total() / 2
	}
}

// admit records circuit's new host copy of n bytes, read from its files, with drop
// to forget it, reserving want bytes of the budget for it (the copy with what goes
// with it: the backends' buffers) and making room as reserve does. A reservation made
// for the copy ahead of its read (reserveAhead) is taken over and shrunk to want, or
// topped up when want passes it.
func (h *hostTier) admit(ctx context.Context, circuit string, n, want int64, drop func()) error {
	h.mu.Lock()
	var res []*Reservation
	if r := h.ahead[circuit]; r != nil {
		res = append(res, r)
	}
	delete(h.ahead, circuit)
	h.mu.Unlock()
	if held := reserved(res); held >= want {
		if held > want {
			res[0].Shrink(want)
		}
	} else {
		more, err := h.reserve(ctx, circuit, want-held)
		if err != nil {
			release(res)
			return err
		}
		if more != nil {
			res = append(res, more)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.copies[circuit]; old != nil {
		h.releaseLocked(old)
	}
	if r := h.ahead[circuit]; r != nil { // reserved ahead while this read ended
		r.Release()
		delete(h.ahead, circuit)
	}
	now := time.Now()
	h.copies[circuit] = &hostCopy{bytes: n, res: res, lastUse: now, drop: drop}
	h.last[circuit] = now
	h.read[circuit] = n
	h.moves[[3]string{circuit, TierFile, TierPinned}]++
	return nil
}

// reserve makes room for n more bytes of circuit's copy: while the tier would pass its
// limit it drops the least recently used copies not in use (other than circuit's), then
// evicts idle device keys (freeDevice) so that theirs can go, unless n alone passes
// the limit (such a copy is admitted over it: a key is proven from a host copy). Then
// it reserves n bytes of the budget the same way while the budget is short, and last
// waits in the budget's line until ctx ends. nil without a budget.
func (h *hostTier) reserve(ctx context.Context, circuit string, n int64) (*Reservation, error) {
	over := func() bool { return h.limit > 0 && h.usedLocked()+h.aheadLocked()+n > h.limit }
	for {
		h.mu.Lock()
		for over() && h.dropLRULocked(circuit) {
		}
		// A copy larger than the whole limit is admitted over it: device keys stay.
		still := over() && n <= h.limit
		h.mu.Unlock()
		if !still || !h.freeDevice(ctx, circuit) {
			break
		}
	}
	h.mu.Lock()
	budget := h.budget
	h.mu.Unlock()
	if budget == nil {
		return nil, nil
	}
	if n > budget.Room() {
		return reserveAs(ctx, budget, KindKey, n) // refused at once: nothing to drop for it
	}
	for {
		if res, err := budget.ReserveFor(doneContext, KindKey, n); err == nil {
			return res, nil
		}
		if budget.Reserved()+n <= budget.Total() {
			break // room, but reservations queued before this one go first
		}
		h.mu.Lock()
		dropped := h.dropLRULocked(circuit)
		h.mu.Unlock()
		if !dropped && !h.freeDevice(ctx, circuit) {
			break
		}
	}
	return reserveAs(ctx, budget, KindKey, n)
}

// reserveAhead reserves up to bound bytes for circuit's copy before it is read, unless
// the copy is held or reserved already: a batch does it before its syntheses reserve
// theirs, so that a read never waits for memory that requests waiting for that very
// key hold. The read's admit takes the reservation over.
func (h *hostTier) reserveAhead(ctx context.Context, circuit string, bound int64) error {
	h.mu.Lock()
	if _, ok := h.ahead[circuit]; ok || h.copies[circuit] != nil || h.budget == nil {
		h.mu.Unlock()
		return nil
	}
	h.ahead[circuit] = nil // being made: a second batch of the circuit does not reserve again
	h.mu.Unlock()
	res, err := h.reserve(ctx, circuit, bound)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || res == nil || h.copies[circuit] != nil {
		// Failed, or the copy was admitted meanwhile (a read already under way).
		delete(h.ahead, circuit)
		if res != nil {
			res.Release()
		}
		return err
	}
	h.ahead[circuit] = res
	return nil
}

func (h *hostTier) aheadLocked() int64 {
	var n int64
	for _, r := range h.ahead {
		if r != nil {
			n += r.Bytes()
		}
	}
	return n
}

// reserved is the bytes rs hold together.
func reserved(rs []*Reservation) int64 {
	var n int64
	for _, r := range rs {
		n += r.Bytes()
	}
	return n
}

func release(rs []*Reservation) {
	for _, r := range rs {
		r.Release()
	}
}

// doneContext makes Budget.ReserveFor a try: it grants at once or gives up.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// hold begins a use of circuit's host copy; false when there is none (dropped since
// it was read: read it again).
func (h *hostTier) hold(circuit string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.copies[circuit]
	if c == nil {
		return false
	}
	c.users++
	c.lastUse = time.Now()
	h.last[circuit] = c.lastUse
	return true
}

// unhold ends a use begun by hold; the tier then drops least recently used copies
// not in use while it is over its limit. It says whether circuit's copy is still held
// in the tier after that.
func (h *hostTier) unhold(circuit string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.copies[circuit]; c != nil && c.users > 0 {
		c.users--
		c.lastUse = time.Now()
	}
	for h.limit > 0 && h.usedLocked() > h.limit && h.dropLRULocked("") {
	}
	return h.copies[circuit] != nil
}

// touch records a use of circuit's key on a device.
func (h *hostTier) touch(circuit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.last[circuit] = now
	if c := h.copies[circuit]; c != nil {
		c.lastUse = now
	}
}

// move counts a move of circuit's key between tiers.
func (h *hostTier) move(circuit, from, to string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.moves[[3]string{circuit, from, to}]++
}

func (h *hostTier) usedLocked() int64 {
	var n int64
	for _, c := range h.copies {
		n += c.bytes
	}
	return n
}

// dropLRULocked drops the least recently used copy not in use, other than keep's;
// false when there is none.
func (h *hostTier) dropLRULocked(keep string) bool {
	var lru string
	var victim *hostCopy
	for name, c := range h.copies {
		if name == keep || c.users > 0 {
			continue
		}
		if victim == nil || c.lastUse.Before(victim.lastUse) {
			lru, victim = name, c
		}
	}
	if victim == nil {
		return false
	}
	delete(h.copies, lru)
	h.releaseLocked(victim)
	h.moves[[3]string{lru, TierPinned, TierFile}]++
	return true
}

func (h *hostTier) releaseLocked(c *hostCopy) {
	release(c.res)
	if c.drop != nil {
		c.drop()
	}
}

// dropIdle drops the least recently used copy not in use, other than keep's; false
// when there is none.
func (h *hostTier) dropIdle(keep string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropLRULocked(keep)
}

// reservedFor is what circuit's host copy holds in the budget (0 when there is none).
func (h *hostTier) reservedFor(circuit string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.copies[circuit]; c != nil {
		return reserved(c.res)
	}
	return 0
}

// state is the bytes of circuit's host copy and whether there is one, the bytes its
// last read from the files brought into memory, and when the key was last used.
func (h *hostTier) state(circuit string) (bytes int64, ok bool, read int64, last time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.copies[circuit]; c != nil {
		bytes, ok = c.bytes, true
	}
	return bytes, ok, h.read[circuit], h.last[circuit]
}

func (h *hostTier) tierMoves() []TierMove {
	h.mu.Lock()
	out := make([]TierMove, 0, len(h.moves))
	for k, n := range h.moves {
		out = append(out, TierMove{Circuit: k[0], From: k[1], To: k[2], Count: n})
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b TierMove) int {
		return cmp.Or(cmp.Compare(a.Circuit, b.Circuit), cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return out
}

func (h *hostTier) limitBytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limit
}
