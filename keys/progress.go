package keys

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// progressLimits say when a load logs progress lines: one of at least minBytes logs
// how far it is every `every`, or at each further tenth once minGap has passed since
// the last line, so a load of minutes shows it is moving and a load of a second stays
// at its start and done lines.
type progressLimits struct {
	minBytes      int64
	every, minGap time.Duration
}

var defaultProgress = progressLimits{minBytes: 256 << 20, every: 5 * time.Second, minGap: time.Second}

// loadProgress counts the bytes a key load reads, across the files and passes it makes
// (a dump is read twice: hashed, and decoded as the hash goes or after it), logs them
// and tells report. Its passes may run at once: add is safe for concurrent use.
type loadProgress struct {
	circuit string
	log     *slog.Logger
	report  func(read, total int64) // nil: nobody asks
	start   time.Time
	limits  progressLimits

	read, total atomic.Int64
	mu          sync.Mutex // serializes report and the log lines
	lastLog     time.Time
	lastTenth   int64
}

func newLoadProgress(circuit string, log *slog.Logger, report func(read, total int64), limits *progressLimits) *loadProgress {
	if limits == nil {
		limits = &defaultProgress
	}
	return &loadProgress{circuit: circuit, log: log, report: report, limits: *limits, start: time.Now(), lastLog: time.Now()}
}

// expect adds n bytes to what the load is going to read.
func (p *loadProgress) expect(n int64) {
	if n > 0 {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.total.Add(n)
		p.tell(p.read.Load())
	}
}

// reader counts what r delivers; what is the file and pass, for the log.
func (p *loadProgress) reader(r io.Reader, what string) io.Reader {
	return &countingReader{r: r, p: p, what: what}
}

type countingReader struct {
	r    io.Reader
	p    *loadProgress
	what string
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.p.add(int64(n), c.what)
	}
	return n, err
}

func (p *loadProgress) add(n int64, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	read := p.read.Add(n)
	p.tell(read)
	total := p.total.Load()
	if total < p.limits.minBytes {
		return
	}
	now := time.Now()
	tenth := min(10*read/total, 10)
	since := now.Sub(p.lastLog)
	if since < p.limits.every && (tenth <= p.lastTenth || since < p.limits.minGap) {
		return
	}
	p.lastLog, p.lastTenth = now, tenth
	elapsed := now.Sub(p.start)
	p.log.Info("loading proving key: progress", "circuit", p.circuit, "reading", what,
		"bytes_read", read, "bytes_total", total, "percent", 100*read/total,
		"ms", elapsed.Milliseconds(), "mb_per_s", mbPerSecond(read, elapsed))
}

func (p *loadProgress) tell(read int64) {
	if p.report != nil {
		p.report(read, p.total.Load())
	}
}

// mbPerSecond is a rate in MB (10^6 bytes) per second, rounded to one decimal.
func mbPerSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(float64(n)/d.Seconds()/1e5)) / 10
}
