package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/peel-ml/peel/bench"
)

// progress reports the measurements under way on stderr: a one-line bar
// redrawn in place on a terminal, else one line per measurement.
//
// The bar is written here rather than taken from a progress-bar module:
// everything linked into peelbench is live in the process that measures,
// and such a module's globals and tables (Unicode width tables, colour
// handling) made every garbage collection of the allocation-heavy
// workloads measurably slower (vmap_functionalize_256x128: +8%).
type progress struct {
	w          io.Writer
	tty        bool
	total, n   int
	start      time.Time
	what       string
	lastLength int
}

func newProgress(total int) *progress {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
	p := &progress{w: os.Stderr, tty: tty, total: total, start: time.Now()}
	p.draw()
	return p
}

// describe names the measurement under way.
func (p *progress) describe(s string) {
	p.what = s
	p.draw()
}

// done counts one measurement; without a bar it prints it (with the
// ratio to ours when rec is the peer's).
func (p *progress) done(rec bench.Record, ours *bench.Record) {
	if rec.Failed() {
		p.logf("FAIL %s (%s, %s): %s", rec.Workload, rec.Impl, bench.ThreadsPhrase(rec.Threads), rec.Error)
	} else if !p.tty {
		line := fmt.Sprintf("%-28s threads=%d %-5s median %s", rec.Workload, rec.Threads, rec.Impl, bench.FormatNs(rec.MedianNs))
		if ours != nil && !ours.Failed() {
			line += fmt.Sprintf("  (peel/%s %s)", rec.Impl, bench.FormatRatio(ours.MedianNs/rec.MedianNs))
		}
		fmt.Fprintln(p.w, line)
	}
	p.step()
}

// skip counts a step that does not run (the peer lacks the workload).
func (p *progress) skip() { p.step() }

func (p *progress) step() {
	p.n++
	p.draw()
}

// logf prints a line on stderr without garbling the bar.
func (p *progress) logf(format string, args ...any) {
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
	p.draw()
}

// finish removes the bar.
func (p *progress) finish() { p.clear() }

const barWidth = 30

// draw redraws the bar: [=====>      ] 12/40  1m2s, ~2m10s left  what.
func (p *progress) draw() {
	if !p.tty || p.total <= 0 {
		return
	}
	n := min(p.n, p.total)
	fill := barWidth * n / p.total
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	elapsed := time.Since(p.start).Round(time.Second)
	line := fmt.Sprintf("[%s] %d/%d  %v", bar, n, p.total, elapsed)
	if n > 0 && n < p.total {
		left := time.Duration(float64(time.Since(p.start)) * float64(p.total-n) / float64(n)).Round(time.Second)
		line += fmt.Sprintf(", ~%v left", left)
	}
	if p.what != "" {
		line += "  " + p.what
	}
	pad := ""
	if len(line) < p.lastLength {
		pad = strings.Repeat(" ", p.lastLength-len(line))
	}
	fmt.Fprint(p.w, "\r"+line+pad)
	p.lastLength = len(line)
}

func (p *progress) clear() {
	if !p.tty || p.lastLength == 0 {
		return
	}
	fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.lastLength)+"\r")
	p.lastLength = 0
}
