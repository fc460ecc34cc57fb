package bench

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// torchScript is bench/peers/torch_func.py, embedded so that the harness
// runs the peer that matches its own workloads from any directory;
// gptTorch is the module it imports, the PyTorch twin of examples/gpt's
// model (which examples/gpt/testdata/torch_gpt.py imports too).
//
//go:embed peers/torch_func.py
var torchScript []byte

//go:embed peers/gpt_torch.py
var gptTorch []byte

// TorchInstallHint says how to get a python3 with torch on Debian and
// Ubuntu.
const TorchInstallHint = "sudo apt-get install python3-torch"

// PythonCandidates are the interpreters FindPython tries, in order, when
// none is named: Debian's python3 (the one python3-torch installs into),
// then python3 on PATH.
var PythonCandidates = []string{"/usr/bin/python3", "python3"}

// FindPython returns a Python interpreter that can import torch and
// functorch, and torch's version. With explicit set, only that
// interpreter is tried; otherwise PythonCandidates in order. The error,
// when none works, names what was tried and how to install torch.
func FindPython(explicit string) (python, version string, err error) {
	cands := PythonCandidates
	if explicit != "" {
		cands = []string{explicit}
	}
	var tried []string
	for _, c := range cands {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		v, err := torchVersion(path)
		if err != nil {
			tried = append(tried, path+": "+err.Error())
			continue
		}
		return path, v, nil
	}
	return "", "", fmt.Errorf("no python3 with torch (tried %s); install it with `%s`",
		strings.Join(tried, "; "), TorchInstallHint)
}

// torchVersion imports torch and functorch with python and returns
// torch's version.
func torchVersion(python string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import torch, functorch; print(torch.__version__)")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := lastLine(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(string(out)), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Peer is a running peer process: bench/peers/torch_func.py in --serve
// mode, which measures one workload per request with the same method as
// Measure (check, warm-up, repeated samples) and answers with a Record.
// Its thread count is fixed when it starts (the BLAS reads it from the
// environment when torch loads), so a run over several thread counts
// starts one Peer per count. A Peer is not safe for concurrent use.
//
// The protocol, one JSON object per line: the peer first writes a hello,
// {"peer": "torch", "version": V, "threads": N, "workloads": [names]};
// then, for each request {"workload": name, "threads": N, "reps": R,
// "mintime": seconds, "warmup": seconds} read on its stdin, it writes one
// Record, with "error" set instead of times when the workload's check
// failed or it could not run. It exits when its stdin closes. Lines on
// its stdout that do not start with '{' are ignored.
type Peer struct {
	// Name is the Impl of the peer's records ("torch"); Version is the
	// library's version.
	Name, Version string
	// Threads is the thread count the peer runs with.
	Threads int

	has    map[string]bool
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *tail
	script string
	err    error // set once the peer is unusable
}

// peerHello is the first line a peer writes.
type peerHello struct {
	Peer      string   `json:"peer"`
	Version   string   `json:"version"`
	Threads   int      `json:"threads"`
	Workloads []string `json:"workloads"`
}

// peerRequest asks the peer to measure one workload.
type peerRequest struct {
	Workload string  `json:"workload"`
	Threads  int     `json:"threads"`
	Reps     int     `json:"reps"`
	MinTime  float64 `json:"mintime"`
	Warmup   float64 `json:"warmup"`
}

// StartTorch starts bench/peers/torch_func.py in --serve mode under
// python with threads threads, and waits for its hello.
func StartTorch(python string, threads int) (*Peer, error) {
	dir, err := os.MkdirTemp("", "peel-torch-peer-*")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "torch_func.py")
	for name, src := range map[string][]byte{"torch_func.py": torchScript, "gpt_torch.py": gptTorch} {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	p, err := startPeer(exec.Command(python, script, "--serve", "--threads", strconv.Itoa(threads)), 2*time.Minute)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("torch peer: %w", err)
	}
	p.script = dir
	return p, nil
}

// startPeer starts cmd and reads its hello, waiting at most timeout.
func startPeer(cmd *exec.Cmd, timeout time.Duration) (*Peer, error) {
	p := &Peer{cmd: cmd, lines: make(chan string, 16), stderr: &tail{max: 4 << 10}}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.in = in
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if s := strings.TrimSpace(sc.Text()); strings.HasPrefix(s, "{") {
				p.lines <- s
			}
		}
		close(p.lines)
	}()
	line, err := p.next(timeout)
	if err != nil {
		p.kill()
		return nil, err
	}
	var h peerHello
	if err := json.Unmarshal([]byte(line), &h); err != nil || h.Peer == "" {
		p.kill()
		return nil, fmt.Errorf("bad hello %q", line)
	}
	p.Name, p.Version, p.Threads = h.Peer, h.Version, h.Threads
	p.has = map[string]bool{}
	for _, w := range h.Workloads {
		p.has[w] = true
	}
	return p, nil
}

// Has reports whether the peer has a workload of this name.
func (p *Peer) Has(name string) bool { return p.has[name] }

// Err returns the error that made the peer unusable, or nil.
func (p *Peer) Err() error { return p.err }

// Measure asks the peer to measure the named workload with opt (whose
// Threads must be the peer's; its unset fields take the defaults of
// Options). A failed check comes back as a Record with Error set and a
// nil error; the error is for a peer that no longer answers (it died,
// broke the protocol or took far longer than opt allows), after which the
// peer is closed and every later call fails.
func (p *Peer) Measure(name string, opt Options) (Record, error) {
	if p.err != nil {
		return Record{}, p.err
	}
	opt = opt.withDefaults()
	req := peerRequest{
		Workload: name, Threads: opt.Threads, Reps: opt.Reps,
		MinTime: opt.MinTime.Seconds(), Warmup: opt.Warmup.Seconds(),
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Record{}, err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return Record{}, p.fail(fmt.Errorf("%s peer: %w", p.Name, err))
	}
	// A generous bound: setup and checks are not timed, and a workload
	// slower than MinTime/Reps still runs Reps times.
	timeout := 2*time.Minute + 10*(opt.MinTime+opt.Warmup)
	line, err := p.next(timeout)
	if err != nil {
		return Record{}, p.fail(fmt.Errorf("%s peer, %s: %w", p.Name, name, err))
	}
	rec, err := ParsePeerRecord(line)
	if err == nil && rec.Workload != name {
		err = fmt.Errorf("answered for %q", rec.Workload)
	}
	if err != nil {
		return Record{}, p.fail(fmt.Errorf("%s peer, %s: %w", p.Name, name, err))
	}
	return rec, nil
}

// ParsePeerRecord parses one line of a peer's answer: a Record as JSON,
// which must name its workload and implementation and, unless it carries
// an error, have a positive median.
func ParsePeerRecord(line string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return Record{}, fmt.Errorf("bad record %q: %w", line, err)
	}
	if r.Workload == "" || r.Impl == "" {
		return Record{}, fmt.Errorf("record without workload or impl: %q", line)
	}
	if !r.Failed() && !(r.MedianNs > 0) {
		return Record{}, fmt.Errorf("record without a median or an error: %q", line)
	}
	return r, nil
}

// next returns the peer's next JSON line, waiting at most timeout.
func (p *Peer) next(timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			err := p.cmd.Wait()
			p.cmd = nil
			msg := p.stderr.String()
			if msg == "" && err != nil {
				msg = err.Error()
			}
			return "", fmt.Errorf("exited: %s", lastLine(msg))
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("no answer in %v", timeout)
	}
}

// fail marks the peer unusable with err, stops it and returns err.
func (p *Peer) fail(err error) error {
	p.err = err
	p.kill()
	return err
}

func (p *Peer) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		p.cmd = nil
	}
}

// Close ends the peer: it closes its stdin, waits for it to exit (or
// kills it after a few seconds) and removes its script.
func (p *Peer) Close() error {
	var err error
	if p.cmd != nil {
		p.in.Close()
		done := make(chan error, 1)
		cmd := p.cmd
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			err = <-done
		}
		p.cmd = nil
	}
	if p.err == nil {
		p.err = errors.New(p.Name + " peer: closed")
	}
	if p.script != "" {
		os.RemoveAll(p.script)
		p.script = ""
	}
	return err
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
