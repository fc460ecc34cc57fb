package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Meta describes where and how a run was made, for the header of a
// report.
type Meta struct {
	// Machine is the CPU and platform ("AMD EPYC 7B13, linux/amd64, 2
	// CPUs"); see Machine.
	Machine string
	// Go is the Go version, BLAS the CPU backend's BLAS ("gonum",
	// "openblas").
	Go, BLAS string
	// Peer names the peer and its version ("torch 1.13.0"); empty when
	// the run had no peer.
	Peer string
	// Command is the command line that produced the run.
	Command string
	// Limits describes the machine's limits at each thread count of the
	// run, one line each (LimitsLine).
	Limits []string
}

// Machine describes this machine: the CPU model where the OS says it
// (Linux's /proc/cpuinfo), the platform and the number of CPUs.
func Machine() string {
	plat := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if m := cpuModel(); m != "" {
		return m + ", " + plat
	}
	return plat
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}

// WriteMarkdown writes rows as a Markdown table (workload, peel median,
// peer median, ratio peel/peer, threads) under a line that says where
// and how the run was made (m's fields that are set). Without any peer record the peer
// columns are left out. A workload whose Impl is not "peel" (a
// reference) names it after the workload; a failed side shows Mismatch
// and its error is listed under the table.
func WriteMarkdown(w io.Writer, rows []Row, m Meta) error {
	b := &strings.Builder{}
	peer := peerName(m.Peer, rows)
	var head []string
	for _, s := range []string{m.Machine, m.Go, prefixed("BLAS ", m.BLAS), prefixed("peer ", m.Peer)} {
		if s != "" {
			head = append(head, s)
		}
	}
	if m.Command != "" {
		head = append(head, "command: `"+m.Command+"`")
	}
	if len(head) > 0 {
		fmt.Fprintf(b, "%s\n\n", strings.Join(head, ", "))
	}
	for _, l := range m.Limits {
		fmt.Fprintf(b, "- %s\n", l)
	}
	if len(m.Limits) > 0 {
		b.WriteString("\n")
	}
	roof := hasRoof(rows)
	roofHead, roofRule := "", ""
	if roof {
		roofHead, roofRule = " peel of limit |", " ---: |"
		if HasPeer(rows) {
			roofHead, roofRule = " peel of limit | "+peerName(m.Peer, rows)+" of limit |", " ---: | ---: |"
		}
	}

	withPeer := HasPeer(rows)
	mine := ours(rows)
	sp := newSpeedUps(mine)
	withSpeedUp := sp.any(mine)
	spHead, spRule := "", ""
	if withSpeedUp {
		spHead, spRule = " "+SpeedUpHeader+" |", " ---: |"
	}
	if withPeer {
		fmt.Fprintf(b, "| workload | peel median | %s median | peel / %s | threads |%s%s\n", peer, peer, roofHead, spHead)
		b.WriteString("| --- | ---: | ---: | ---: | ---: |" + roofRule + spRule + "\n")
	} else {
		b.WriteString("| workload | peel median | threads |" + roofHead + spHead + "\n")
		b.WriteString("| --- | ---: | ---: |" + roofRule + spRule + "\n")
	}
	var failed []Record
	for _, r := range rows {
		name, med := mdEscape(r.Workload), Dash
		if o := r.Ours; o != nil {
			if o.Impl != "peel" {
				name += " (" + mdEscape(o.Impl) + ")"
			}
			med = medianCell(*o)
			if o.Failed() {
				failed = append(failed, *o)
			}
		}
		spCell := ""
		if withSpeedUp {
			spCell = " " + sp.cell(r.Ours) + " |"
		}
		roofCells := ""
		if roof {
			roofCells = " " + roofCell(r.Ours) + " |"
			if withPeer {
				roofCells += " " + roofCell(r.Peer) + " |"
			}
		}
		if !withPeer {
			fmt.Fprintf(b, "| %s | %s | %d |%s%s\n", name, med, r.Threads, roofCells, spCell)
			continue
		}
		pmed := Dash
		if p := r.Peer; p != nil {
			pmed = medianCell(*p)
			if p.Failed() {
				failed = append(failed, *p)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d |%s%s\n", name, med, pmed, ratioCell(r), r.Threads, roofCells, spCell)
	}
	if len(failed) > 0 {
		fmt.Fprintf(b, "\n%s: the result did not match the reference, so no time is reported:\n\n", Mismatch)
		for _, r := range failed {
			fmt.Fprintf(b, "- %s (%s, %s): %s\n", mdEscape(r.Workload), mdEscape(r.Impl), ThreadsPhrase(r.Threads), mdEscape(r.Error))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hasRoof reports whether any record of rows is measured against a
// limit of the machine.
func hasRoof(rows []Row) bool {
	for _, r := range rows {
		if r.Ours != nil && r.Ours.PctRoof > 0 || r.Peer != nil && r.Peer.PctRoof > 0 {
			return true
		}
	}
	return false
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// peerName is the peer's name for column headers: the first word of the
// peer's description, else the Impl of the first peer record, else
// "peer".
func peerName(desc string, rows []Row) string {
	if f := strings.Fields(desc); len(f) > 0 {
		return f[0]
	}
	for _, r := range rows {
		if r.Peer != nil {
			return r.Peer.Impl
		}
	}
	return "peer"
}

// mdEscape makes s safe inside a table cell: pipes are escaped and line
// breaks become spaces.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// ChartTitle is the title of the chart of rows: what the bars show (the
// ratios to the peer meta.Peer names, "the peer" when it is empty,
// where some row has a peer record), then the machine and BLAS when meta
// names them.
func ChartTitle(rows []Row, meta Meta) string {
	title := "peel, median time per run"
	if HasPeer(rows) {
		peer := meta.Peer
		if peer == "" {
			peer = "the peer"
		}
		title = "peel vs " + peer + ": ratio of medians (below 1: peel is faster)"
	}
	if meta.Machine != "" {
		title += "\n" + meta.Machine
		if meta.BLAS != "" {
			title += ", BLAS " + meta.BLAS
		}
	}
	return title
}
