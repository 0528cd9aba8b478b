package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// Charts are inline SVG built on the server: the page needs no script and no network.

// PhaseColors colour the stacked phases (and the legend).
var PhaseColors = map[string]string{
	"queue": "#9e9e9e", "batch_wait": "#bcaaa4", "mem_wait": "#ffb74d", "srs": "#ba68c8",
	"synth": "#4fc3f7", "prove_wait": "#e6d84f", "prove": "#e57373", "verify": "#81c784",
	"persist": "#7986cb",
}

const (
	p50Color = "#263238"
	p95Color = "#c62828"
)

// frame is a chart's drawing area in SVG units.
type frame struct {
	w, h                     float64
	left, right, top, bottom float64
	n                        int // bars
	ymax                     float64
}

func (f frame) plotW() float64 { return f.w - f.left - f.right }
func (f frame) plotH() float64 { return f.h - f.top - f.bottom }
func (f frame) slot() float64  { return f.plotW() / float64(max(f.n, 1)) }
func (f frame) x(i int) float64 {
	return f.left + f.slot()*float64(i)
}
func (f frame) y(v float64) float64 { return f.top + f.plotH()*(1-v/f.ymax) }

// barWidth leaves gaps between bars and keeps a few bars from becoming slabs.
func (f frame) barWidth() float64 { return min(f.slot()*0.72, 28) }

// niceStep is 1, 2 or 5 times a power of ten, giving about n ticks up to max.
func niceStep(maxV float64, n int) float64 {
	if maxV <= 0 {
		return 1
	}
	raw := maxV / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// FormatMs prints a duration given in milliseconds at a readable precision.
func FormatMs(ms float64) string {
	switch {
	case ms >= 120_000:
		return fmt.Sprintf("%.1f min", ms/60_000)
	case ms >= 1000:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}

func axisMs(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms >= 120_000:
		return fmt.Sprintf("%gmin", round3(ms/60_000))
	case ms >= 1000:
		return fmt.Sprintf("%gs", round3(ms/1000))
	default:
		return fmt.Sprintf("%gms", round3(ms))
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func periodLabel(t time.Time, bucket time.Duration, spansDays bool) string {
	t = t.UTC()
	switch {
	case bucket >= 24*time.Hour:
		return t.Format("2006-01-02")
	case spansDays:
		return t.Format("01-02 15:04")
	default:
		return t.Format("15:04")
	}
}

// axes draws the y grid with labels from fmtY, and x labels under some bars.
func axes(b *strings.Builder, f frame, step float64, fmtY func(float64) string, pts []Point, bucket time.Duration) {
	for v := 0.0; v <= f.ymax+step/1000; v += step {
		y := f.y(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`, f.left, y, f.w-f.right, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11" fill="#555">%s</text>`, f.left-6, y+4, template.HTMLEscapeString(fmtY(v)))
	}
	if len(pts) == 0 {
		return
	}
	spansDays := pts[0].Period.UTC().YearDay() != pts[len(pts)-1].Period.UTC().YearDay()
	every := max(1, int(math.Ceil(float64(len(pts))/8)))
	for i := 0; i < len(pts); i += every {
		x := f.x(i) + f.slot()/2
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="#555">%s</text>`,
			x, f.h-f.bottom+16, template.HTMLEscapeString(periodLabel(pts[i].Period, bucket, spansDays)))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9e9e9e"/>`, f.left, f.y(0), f.w-f.right, f.y(0))
}

func svgOpen(b *strings.Builder, f frame, label string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		f.w, f.h, f.w, f.h, template.HTMLEscapeString(label))
}

// TimingChart stacks each period's mean phase times and draws the p50 and p95 of
// the total over them.
func TimingChart(c CircuitHistory, bucket time.Duration) template.HTML {
	f := frame{w: 760, h: 260, left: 64, right: 12, top: 12, bottom: 28, n: len(c.Points)}
	stack := StackPhases()
	for _, p := range c.Points {
		sum := 0.0
		for _, ph := range stack {
			sum += p.Mean[ph]
		}
		f.ymax = max(f.ymax, sum, p.P95)
	}
	step := niceStep(f.ymax, 4)
	f.ymax = math.Max(step, math.Ceil(f.ymax/step)*step)

	var b strings.Builder
	svgOpen(&b, f, "timing of "+c.Circuit)
	axes(&b, f, step, axisMs, c.Points, bucket)
	bw := f.barWidth()
	for i, p := range c.Points {
		if p.N == 0 {
			continue
		}
		x := f.x(i) + (f.slot()-bw)/2
		base := 0.0
		for _, ph := range stack {
			v := p.Mean[ph]
			if v <= 0 {
				continue
			}
			y0, y1 := f.y(base), f.y(base+v)
			fmt.Fprintf(&b, `<rect class="phase-%s" x="%.1f" y="%.1f" width="%.1f" height="%.2f" fill="%s"><title>%s %s: mean %s (%d proofs)</title></rect>`,
				ph, x, y1, bw, math.Max(y0-y1, 0.5), PhaseColors[ph],
				periodLabel(p.Period, bucket, true), ph, FormatMs(v), p.N)
			base += v
		}
	}
	line := func(name, color, dash string, val func(Point) float64) {
		var seg []string
		flush := func() {
			if len(seg) > 1 {
				fmt.Fprintf(&b, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, name, strings.Join(seg, " "), color, dash)
			}
			seg = seg[:0]
		}
		for i, p := range c.Points {
			if p.N == 0 {
				flush()
				continue
			}
			x, y := f.x(i)+f.slot()/2, f.y(val(p))
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s total %s: %s</title></circle>`,
				x, y, color, periodLabel(p.Period, bucket, true), name, FormatMs(val(p)))
		}
		flush()
	}
	line("p95", p95Color, ` stroke-dasharray="5 3"`, func(p Point) float64 { return p.P95 })
	line("p50", p50Color, "", func(p Point) float64 { return p.P50 })
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// ThroughputChart draws succeeded proofs per period with the failed attempts on top.
func ThroughputChart(c CircuitHistory, bucket time.Duration) template.HTML {
	f := frame{w: 760, h: 130, left: 64, right: 12, top: 10, bottom: 28, n: len(c.Points)}
	for _, p := range c.Points {
		f.ymax = max(f.ymax, float64(p.N+p.Failed))
	}
	step := niceStep(f.ymax, 3)
	step = math.Max(1, math.Round(step))
	f.ymax = math.Max(step, math.Ceil(f.ymax/step)*step)

	var b strings.Builder
	svgOpen(&b, f, "throughput of "+c.Circuit)
	axes(&b, f, step, func(v float64) string { return fmt.Sprintf("%g", v) }, c.Points, bucket)
	bw := f.barWidth()
	perHour := float64(time.Hour) / float64(bucket)
	for i, p := range c.Points {
		x := f.x(i) + (f.slot()-bw)/2
		if p.N > 0 {
			y := f.y(float64(p.N))
			fmt.Fprintf(&b, `<rect class="throughput" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#546e7a"><title>%s: %d proofs (%.1f/h)</title></rect>`,
				x, y, bw, f.y(0)-y, periodLabel(p.Period, bucket, true), p.N, float64(p.N)*perHour)
		}
		if p.Failed > 0 {
			y0, y1 := f.y(float64(p.N)), f.y(float64(p.N+p.Failed))
			fmt.Fprintf(&b, `<rect class="failed" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d failed attempts</title></rect>`,
				x, y1, bw, y0-y1, p95Color, periodLabel(p.Period, bucket, true), p.Failed)
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// GPUChart draws each period's mean GPU utilization, as read at the end of the
// period's attempts, on the timing chart's periods.
func GPUChart(c CircuitHistory, bucket time.Duration) template.HTML {
	f := frame{w: 760, h: 110, left: 64, right: 12, top: 10, bottom: 28, n: len(c.Points), ymax: 100}
	var b strings.Builder
	svgOpen(&b, f, "GPU utilization of "+c.Circuit)
	axes(&b, f, 50, func(v float64) string { return fmt.Sprintf("%g%%", v) }, c.Points, bucket)
	bw := f.barWidth()
	for i, p := range c.Points {
		if p.GPUReadings == 0 {
			continue
		}
		x, y := f.x(i)+(f.slot()-bw)/2, f.y(math.Min(p.GPUUtil, 100))
		fmt.Fprintf(&b, `<rect class="gpu-util" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#43a047"><title>%s: GPU %.0f%% busy (mean of %d readings)</title></rect>`,
			x, y, bw, f.y(0)-y, periodLabel(p.Period, bucket, true), p.GPUUtil, p.GPUReadings)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
