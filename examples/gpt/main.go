// Command gpt trains a character-level GPT from scratch, checkpoints and
// resumes it, and samples text from it: nanoGPT's model and recipe in
// peel (package examples/gpt/model), side by side with the PyTorch twin
// in testdata/.
//
// The model: token and position embeddings, -layers pre-LN blocks
// (LayerNorm, causal multi-head self-attention, residual; LayerNorm, a
// GELU MLP, residual), a final LayerNorm and the head tied to the token
// embedding, with dropout on the embeddings, the attention weights and
// the residual branches drawn from explicit keys. Training: AdamW
// (decoupled weight decay on the Linear weights only), clipping by the
// global norm, linear warmup and cosine decay, eagerly or -compile'd,
// each block checkpointed with -remat. The corpus is any UTF-8 text
// (-data: a file, or a directory of files), tokenized by character
// (runes, or bytes with -bytes), split 90/10 into training and
// validation tokens; batches are random windows drawn from a key. The
// default corpus is Debian's fortunes package (apt-get install
// fortunes), nothing is downloaded.
//
//	go run ./examples/gpt                                   # the small default model, 300 steps
//	go run ./examples/gpt -preset -steps 5000 -compile -checkpoint gpt.safetensors
//	go run ./examples/gpt -checkpoint gpt.safetensors -steps 0 -sample 500 -prompt "Q: "
//
// With -checkpoint FILE the run saves the parameters, the optimizer
// state, the key, the step, the configuration and the vocabulary every
// -every steps (package checkpoint: safetensors, atomic), and a run that
// finds FILE resumes from it: the batches and dropout masks of step i
// come from keys folded from the seed and i, so a stopped run resumed
// ends bit for bit where an uninterrupted one does.
//
// -sample N prints N characters after -prompt, drawn with -temperature
// and -top-k by model.Generate: one pass over the prompt fills a KV
// cache, then one compiled transforms.Scan decodes a token per step from
// it (longer texts continue from the last half of the context). -export
// DIR writes that sampler as an exported program (transforms.Export)
// with its inputs and the vocabulary, for examples/peelrun:
//
//	go run ./examples/gpt -checkpoint gpt.safetensors -steps 0 -export out
//	go run ./examples/peelrun -program out/sample.peel -in out/prompt.npz -out out/tokens.npz
//
// Built with the mpi tag and started by mpirun, the run is
// data-parallel: each process takes its block of every global batch
// (-batch rows, which the processes must divide), and dist/ddp averages
// the gradients while the backward pass runs (ddp.ValueAndGrad3), so
// the losses equal one process's on the same global batch (with
// -dropout 0: each process draws its own masks). -zero1 also shards the
// AdamW state over the processes (ddp.ShardOptimizer):
//
//	go build -tags mpi -o gpt ./examples/gpt && mpirun -np 2 ./gpt -dropout 0 [-zero1]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/examples/gpt/model"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// settings are the command's flags.
type settings struct {
	data      string
	bytes     bool
	preset    bool
	cfg       model.Config
	f64       bool
	batch     int
	steps     int
	hyper     model.Hyper
	seed      int64
	compile   bool
	remat     string
	evalEvery int
	evalIters int
	logEvery  int
	ckpt      string
	every     int
	stopAfter int
	initFile  string
	sample    int
	prompt    string
	sampling  model.Sampling
	export    string
	zero1     bool
	quiet     bool
	losses    bool
}

// remats are the -remat policies.
var remats = map[string]*transforms.SavePolicy{
	"":        nil,
	"dots":    &transforms.DotsSaveable,
	"mincut":  &transforms.MinCut,
	"nothing": &transforms.NothingSaveable,
}

// Result is what a run reports.
type Result struct {
	Losses   []float64 // the training loss of each step run (this run's, after a resume)
	Val      []float64 // the validation losses measured, in order
	FinalVal float64   // the validation loss after the last step
	Sample   string    // the sampled text (-sample)
	Params   model.Params
	Config   model.Config
	Vocab    *model.Vocab
	Steps    int // the steps done, a resumed run's earlier ones included
}

// saved is what a checkpoint holds as tensors; the step, the
// configuration and the vocabulary go in its metadata.
type saved struct {
	Params model.Params
	Opt    any
	Key    *peel.Tensor
}

// runner is one process's training: its communicator (nil for a lone
// process) and the global batch's block it computes.
type runner struct {
	s    settings
	comm dist.Communicator
	out  func(format string, args ...any) // prints on the first process only
}

func (r *runner) rank() int {
	if r.comm == nil {
		return 0
	}
	return r.comm.Rank()
}

func (r *runner) size() int {
	if r.comm == nil {
		return 1
	}
	return r.comm.Size()
}

// stepper is a training step over an optimizer state of any tree type.
type stepper struct {
	init func(model.Params) any
	step func(p model.Params, s any, x, y, key *peel.Tensor) (model.Params, any, *peel.Tensor)
}

// labels are a batch's targets with the step's dropout key, one argument
// of ddp.ValueAndGrad3's loss.
type labels struct{ Y, Key *peel.Tensor }

// newStepper returns the step the settings ask for: eager or compiled,
// alone or data-parallel over r.comm, with AdamW or ZeRO-1.
func (r *runner) newStepper(c model.Config) stepper {
	s := r.s
	remat := remats[s.remat]
	opt := model.Optimizer(s.hyper)
	compile := func(f func(model.Params, any, *peel.Tensor, *peel.Tensor, *peel.Tensor) tree.Tuple3[model.Params, any, *peel.Tensor]) func(model.Params, any, *peel.Tensor, *peel.Tensor, *peel.Tensor) tree.Tuple3[model.Params, any, *peel.Tensor] {
		if s.compile {
			return transforms.Compile5(f)
		}
		return f
	}
	if r.comm == nil {
		step := model.NewStep(c, opt, remat)
		f := compile(func(p model.Params, st any, x, y, key *peel.Tensor) tree.Tuple3[model.Params, any, *peel.Tensor] {
			p, st2, l := step(p, st.(optim.State), x, y, key).Unpack()
			return tree.Pack3[model.Params, any](p, st2, l)
		})
		return stepper{
			init: func(p model.Params) any { return opt.Init(p) },
			step: func(p model.Params, st any, x, y, key *peel.Tensor) (model.Params, any, *peel.Tensor) {
				return f(p, st, x, y, key).Unpack()
			},
		}
	}
	loss := func(p model.Params, x *peel.Tensor, l labels) *peel.Tensor {
		o := model.Options{Remat: remat}
		if c.Dropout > 0 {
			o.Key = l.Key
		}
		return model.Loss(c, p, x, l.Y, o)
	}
	grad := ddp.ValueAndGrad3(loss, r.comm)
	if !s.zero1 {
		f := compile(func(p model.Params, st any, x, y, key *peel.Tensor) tree.Tuple3[model.Params, any, *peel.Tensor] {
			l, g := grad(p, x, labels{y, key})
			u, st2 := opt.Update(g, st.(optim.State), p)
			return tree.Pack3[model.Params, any](optim.ApplyUpdates(p, u), st2, l)
		})
		return stepper{
			init: func(p model.Params) any { return opt.Init(p) },
			step: func(p model.Params, st any, x, y, key *peel.Tensor) (model.Params, any, *peel.Tensor) {
				return f(p, st, x, y, key).Unpack()
			},
		}
	}
	// ZeRO-1: Adam's moments sharded over the processes. The gradients
	// are all-reduced first (clipping needs the global norm of the mean
	// gradient), and the decoupled weight decay, which depends on each
	// leaf's path, is applied outside the elementwise sharded Adam:
	// p - lr·adam - lr·wd·p is AdamW's update.
	h := s.hyper
	sched := h.Schedule()
	z := ddp.ShardOptimizer[model.Params](optim.Adam[*peel.Tensor](sched, optim.Betas(h.Beta1, h.Beta2)), r.comm)
	var clip optim.Transformation[model.Params]
	if h.Clip > 0 {
		clip = optim.ClipByGlobalNorm[model.Params](h.Clip)
	}
	type zstate struct {
		Count *peel.Tensor // the steps done, for the weight decay's learning rate
		Shard ddp.ZeROState
	}
	f := compile(func(p model.Params, st any, x, y, key *peel.Tensor) tree.Tuple3[model.Params, any, *peel.Tensor] {
		zs := st.(zstate)
		l, g := grad(p, x, labels{y, key})
		if clip != nil {
			g, _ = clip.Update(g, optim.EmptyState{}, p)
		}
		next, shard := z.Step(p, g, zs.Shard)
		lr := sched(zs.Count)
		decayed := tree.Paths(p)
		pl, nl := tree.Leaves(p), tree.Leaves(next)
		for i, path := range decayed {
			if model.Decayed(path) && h.WeightDecay != 0 {
				nl[i] = peel.Sub(nl[i], peel.Mul(pl[i], peel.AsType(peel.Mul(lr, h.WeightDecay), pl[i].DType())))
			}
		}
		next = tree.Unflatten(p, nl)
		return tree.Pack3[model.Params, any](next, zstate{peel.Add(zs.Count, 1), shard}, l)
	})
	return stepper{
		init: func(p model.Params) any { return zstate{peel.Zeros(peel.Int64), z.Init(p)} },
		step: func(p model.Params, st any, x, y, key *peel.Tensor) (model.Params, any, *peel.Tensor) {
			return f(p, st, x, y, key).Unpack()
		},
	}
}

// Key derivation: every random draw of step i is keyed by the seed and
// i, so a resumed run draws what an uninterrupted one would.
const (
	streamBatch = iota + 1
	streamDropout
	streamEval
	streamSample
)

func stream(key *peel.Tensor, s int, i int) *peel.Tensor {
	return peel.FoldIn(peel.FoldIn(key, int64(s)), int64(i))
}

// block is this process's rows of a global batch.
func (r *runner) block(t *peel.Tensor) *peel.Tensor {
	n := r.size()
	if n == 1 {
		return t
	}
	per := t.Shape()[0] / n
	return peel.Narrow(t, 0, r.rank()*per, per)
}

// evalLoss is the mean loss over iters batches of the validation split.
func evalLoss(c model.Config, p model.Params, eval func(model.Params, *peel.Tensor, *peel.Tensor) *peel.Tensor, val []int64, key *peel.Tensor, iters, batch int) float64 {
	sum := 0.0
	for i := range iters {
		x, y := model.Batch(peel.FoldIn(key, int64(i)), val, batch, c.Context)
		sum += eval(p, x, y).Item()
	}
	return sum / float64(iters)
}

// metadata of a checkpoint.
func metadata(step int, c model.Config, v *model.Vocab, seed int64) (map[string]string, error) {
	vj, err := v.MarshalText()
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"step":  strconv.Itoa(step),
		"seed":  strconv.FormatInt(seed, 10),
		"vocab": string(vj),
		"config": fmt.Sprintf("%d,%d,%d,%d,%d,%s,%s", c.Vocab, c.Context, c.Layers, c.Heads, c.Width,
			strconv.FormatFloat(c.Dropout, 'g', -1, 64), c.DType),
	}, nil
}

func parseConfig(s string) (model.Config, error) {
	var c model.Config
	f := strings.Split(s, ",")
	if len(f) != 7 {
		return c, fmt.Errorf("the checkpoint's config %q has %d fields, want 7", s, len(f))
	}
	var err error
	ints := []*int{&c.Vocab, &c.Context, &c.Layers, &c.Heads, &c.Width}
	for i, p := range ints {
		if *p, err = strconv.Atoi(f[i]); err != nil {
			return c, fmt.Errorf("the checkpoint's config: %w", err)
		}
	}
	if c.Dropout, err = strconv.ParseFloat(f[5], 64); err != nil {
		return c, fmt.Errorf("the checkpoint's config: %w", err)
	}
	switch f[6] {
	case peel.Float32.String():
		c.DType = peel.Float32
	case peel.Float64.String():
		c.DType = peel.Float64
	default:
		return c, fmt.Errorf("the checkpoint's dtype %q", f[6])
	}
	return c, nil
}

// ckptPath is this process's checkpoint file: the path itself, or with
// -zero1 over several processes one file per process (each holds its
// shard of the optimizer state).
func (r *runner) ckptPath() string {
	if r.s.zero1 && r.size() > 1 {
		return fmt.Sprintf("%s.%dof%d", r.s.ckpt, r.rank(), r.size())
	}
	return r.s.ckpt
}

// resumeMeta reads the checkpoint's metadata, or nil when there is no
// checkpoint file yet.
func (r *runner) resumeMeta() (meta map[string]string, err error) {
	f, err := checkpoint.Open(r.ckptPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Metadata, nil
}

// errStopped is the early stop of -stop-after.
var errStopped = errors.New("stopped early (-stop-after); run again with the same -checkpoint to resume")

// run trains and samples as the settings say.
func (r *runner) run() (Result, error) {
	s := r.s
	var res Result
	key := peel.Key(s.seed)
	var meta map[string]string
	if s.ckpt != "" {
		var err error
		if meta, err = r.resumeMeta(); err != nil {
			return res, err
		}
	}
	c := s.cfg
	var vocab *model.Vocab
	start := 0
	if meta != nil {
		var err error
		if vocab, err = model.ParseVocab(meta["vocab"]); err != nil {
			return res, err
		}
		if c, err = parseConfig(meta["config"]); err != nil {
			return res, err
		}
		if start, err = strconv.Atoi(meta["step"]); err != nil {
			return res, fmt.Errorf("the checkpoint's step: %w", err)
		}
	}
	var toks []int64
	if s.steps > start || meta == nil {
		text, err := model.ReadCorpus(s.data)
		if err != nil {
			return res, fmt.Errorf("the corpus: %w (install Debian's fortunes package, or give -data FILE)", err)
		}
		if vocab == nil {
			vocab = model.NewVocab(text, s.bytes)
		}
		if toks, err = vocab.Encode(text); err != nil {
			return res, err
		}
	}
	if meta == nil {
		c.Vocab = vocab.Size()
	}
	if err := peel.Catch(c.Check); err != nil {
		return res, err
	}
	ds := model.NewDataset(toks)
	st := r.newStepper(c)
	params := model.Init(peel.FoldIn(key, 0), c)
	if s.initFile != "" && meta == nil {
		var err error
		if params, err = checkpoint.Load(s.initFile, params); err != nil {
			return res, err
		}
	}
	opt := st.init(params)
	if meta != nil {
		sv, err := checkpoint.Load(r.ckptPath(), saved{params, opt, key})
		if err != nil {
			return res, err
		}
		params, opt, key = sv.Params, sv.Opt, sv.Key
		r.out("resumed from %s at step %d\n", r.ckptPath(), start)
	}
	res.Config, res.Vocab = c, vocab
	if s.batch%r.size() != 0 {
		return res, fmt.Errorf("-batch %d is not divisible by the %d processes", s.batch, r.size())
	}
	eval := func(p model.Params, x, y *peel.Tensor) *peel.Tensor { return model.Loss(c, p, x, y, model.Options{}) }
	if s.compile {
		eval = transforms.Compile3(eval)
	}
	if start < s.steps {
		r.out("%d parameters: %d layers, %d heads, width %d, context %d, vocabulary %d, %s; %d training and %d validation tokens\n",
			params.Count(), c.Layers, c.Heads, c.Width, c.Context, c.Vocab, c.DType, len(ds.Train), len(ds.Val))
	}
	t0 := time.Now()
	tokens := 0
	ran := 0
	for i := start; i < s.steps; i++ {
		x, y := model.Batch(stream(key, streamBatch, i), ds.Train, s.batch, c.Context)
		dk := stream(key, streamDropout, i)
		if r.size() > 1 {
			dk = peel.FoldIn(dk, int64(r.rank()))
		}
		var l *peel.Tensor
		params, opt, l = st.step(params, opt, r.block(x), r.block(y), dk)
		loss := l.Item()
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return res, fmt.Errorf("step %d: the loss is %v", i, loss)
		}
		res.Losses = append(res.Losses, loss)
		if s.losses {
			r.out("loss %d %.17g\n", i, loss)
		}
		tokens += s.batch * c.Context
		ran++
		if s.logEvery > 0 && ((i+1)%s.logEvery == 0 || i+1 == s.steps) {
			el := time.Since(t0)
			rate := float64(tokens) / el.Seconds()
			eta := time.Duration(float64(el) / float64(ran) * float64(s.steps-i-1))
			r.out("step %5d/%d  loss %.4f  lr %.2e  %6.0f tok/s  %6.1f ms/step  ETA %s\n", i+1, s.steps, loss,
				s.hyper.Schedule()(peel.Full(peel.Int64, float64(i))).Item(), rate, el.Seconds()*1e3/float64(ran), eta.Round(time.Second))
		}
		if s.evalEvery > 0 && (i+1)%s.evalEvery == 0 && i+1 < s.steps {
			v := evalLoss(c, params, eval, ds.Val, stream(key, streamEval, i+1), s.evalIters, s.batch)
			res.Val = append(res.Val, v)
			r.out("step %5d  validation loss %.4f\n", i+1, v)
		}
		if s.ckpt != "" && ((i+1)%s.every == 0 || i+1 == s.steps) {
			m, err := metadata(i+1, c, vocab, s.seed)
			if err != nil {
				return res, err
			}
			if r.rank() == 0 || s.zero1 {
				if err := checkpoint.Save(r.ckptPath(), saved{params, opt, key}, m); err != nil {
					return res, err
				}
			}
		}
		if s.stopAfter > 0 && ran == s.stopAfter && i+1 < s.steps {
			res.Params, res.Steps = params, i+1
			return res, errStopped
		}
	}
	res.Params, res.Steps = params, max(start, s.steps)
	if len(ds.Val) > c.Context && s.evalIters > 0 {
		res.FinalVal = evalLoss(c, params, eval, ds.Val, stream(key, streamEval, res.Steps), s.evalIters, s.batch)
		r.out("validation loss %.4f after %d steps (the unigram entropy of the training text: %.4f)\n", res.FinalVal, res.Steps, unigramEntropy(ds.Train, c.Vocab))
	}
	if s.sample > 0 {
		text, err := sampleText(c, params, vocab, s.prompt, s.sample, s.sampling, stream(key, streamSample, res.Steps))
		if err != nil {
			return res, err
		}
		res.Sample = text
		r.out("--- %d characters sampled (temperature %g, top-k %d) after %q:\n%s%s\n---\n", s.sample, s.sampling.Temperature, s.sampling.TopK, s.prompt, s.prompt, text)
	}
	if s.export != "" && r.rank() == 0 {
		if err := exportSampler(s.export, c, params, vocab, s.prompt, s.sample, s.sampling, stream(key, streamSample, res.Steps)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// unigramEntropy is the entropy (nats) of the tokens' frequencies: the
// loss of a model that knows only how often each symbol occurs.
func unigramEntropy(toks []int64, vocab int) float64 {
	counts := make([]float64, vocab)
	for _, t := range toks {
		counts[t]++
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			q := n / float64(len(toks))
			h -= q * math.Log(q)
		}
	}
	return h
}

// promptTokens encodes the prompt; an empty prompt starts from a newline
// (or the first symbol when the vocabulary has none).
func promptTokens(v *model.Vocab, prompt string) ([]int64, error) {
	if prompt == "" {
		if t, err := v.Encode("\n"); err == nil {
			return t, nil
		}
		return []int64{0}, nil
	}
	return v.Encode(prompt)
}

// sampleText draws n symbols after the prompt. Each chunk is one
// compiled model.Generate: a prompt of at most half the context, then as
// many tokens as fit in the context; the next chunk's prompt is the last
// half-context of the text so far.
func sampleText(c model.Config, p model.Params, v *model.Vocab, prompt string, n int, s model.Sampling, key *peel.Tensor) (string, error) {
	seq, err := promptTokens(v, prompt)
	if err != nil {
		return "", err
	}
	keep := max(c.Context/2, 1)
	gens := map[[2]int]func(model.Params, *peel.Tensor, *peel.Tensor) *peel.Tensor{}
	var out []int64
	for chunk := 0; len(out) < n; chunk++ {
		ctx := seq[max(0, len(seq)-keep):]
		m := min(n-len(out), c.Context-len(ctx)+1)
		gen, ok := gens[[2]int{len(ctx), m}]
		if !ok {
			gen = transforms.Compile3(func(p model.Params, prompt, key *peel.Tensor) *peel.Tensor {
				return model.Generate(c, p, prompt, key, m, s)
			})
			gens[[2]int{len(ctx), m}] = gen
		}
		got := gen(p, peel.FromInt64s(ctx, 1, len(ctx)), peel.FoldIn(key, int64(chunk))).Int64s()
		out = append(out, got...)
		seq = append(seq, got...)
	}
	return v.Decode(out), nil
}

// SampleArgs are the exported sampler's arguments: the prompt [1, P]
// and the key.
type SampleArgs struct{ Prompt, Key *peel.Tensor }

// exportSampler writes dir/sample.peel, the sampler of the prompt's
// length and min(n, what fits) tokens with the weights inside,
// dir/prompt.npz (Prompt and Key, its arguments) and dir/vocab.json.
func exportSampler(dir string, c model.Config, p model.Params, v *model.Vocab, prompt string, n int, s model.Sampling, key *peel.Tensor) error {
	toks, err := promptTokens(v, prompt)
	if err != nil {
		return err
	}
	if len(toks) > c.Context {
		toks = toks[len(toks)-c.Context:]
	}
	m := min(max(n, 1), c.Context-len(toks)+1)
	args := SampleArgs{peel.FromInt64s(toks, 1, len(toks)), peel.FoldIn(key, 0)}
	e := transforms.Export(func(a SampleArgs) *peel.Tensor { return model.Generate(c, p, a.Prompt, a.Key, m, s) }, args)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sample.peel"), e.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "prompt.npz"))
	if err != nil {
		return err
	}
	if err := data.WriteNPZ(f, map[string]*peel.Tensor{"Prompt": args.Prompt, "Key": args.Key}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	vj, err := v.MarshalText()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.json"), vj, 0o644); err != nil {
		return err
	}
	// What the program gives, for the reader to compare with peelrun's.
	want := v.Decode(e.Call(args.Prompt, args.Key)[0].Int64s())
	if err := os.WriteFile(filepath.Join(dir, "expected.txt"), []byte(want), 0o644); err != nil {
		return err
	}
	fmt.Printf("exported %s (%d bytes): %d tokens after a prompt of %d, to %s; its arguments in %s, the vocabulary in %s\n",
		e, len(e.Bytes()), m, len(toks), filepath.Join(dir, "sample.peel"), filepath.Join(dir, "prompt.npz"), filepath.Join(dir, "vocab.json"))
	return nil
}

func parseFlags(args []string) (settings, error) {
	var s settings
	fl := flag.NewFlagSet("gpt", flag.ContinueOnError)
	fl.StringVar(&s.data, "data", model.DebianFortunes, "the corpus: a UTF-8 text file, or a directory of them")
	fl.BoolVar(&s.bytes, "bytes", false, "tokenize bytes instead of runes")
	fl.BoolVar(&s.preset, "preset", false, "nanoGPT's shakespeare_char model: 6 layers, 6 heads, width 384, context 256, dropout 0.2, batch 64")
	def := model.Small(0)
	fl.IntVar(&s.cfg.Layers, "layers", def.Layers, "transformer blocks")
	fl.IntVar(&s.cfg.Heads, "heads", def.Heads, "attention heads")
	fl.IntVar(&s.cfg.Width, "width", def.Width, "embedding width")
	fl.IntVar(&s.cfg.Context, "context", def.Context, "context length (tokens)")
	fl.Float64Var(&s.cfg.Dropout, "dropout", def.Dropout, "dropout rate")
	fl.BoolVar(&s.f64, "f64", false, "train in float64 (default float32)")
	fl.IntVar(&s.batch, "batch", 32, "sequences per (global) batch")
	fl.IntVar(&s.steps, "steps", 300, "training steps in all (a resumed run continues to this many)")
	lr := fl.Float64("lr", 1e-3, "peak learning rate")
	minLR := fl.Float64("min-lr", 1e-4, "learning rate at the end of the cosine decay")
	warmup := fl.Int("warmup", -1, "warmup steps (default: 100, or a tenth of a shorter run)")
	wd := fl.Float64("wd", 0.1, "AdamW's weight decay (Linear weights only)")
	clip := fl.Float64("clip", 1, "clip gradients to this global norm (0: no clipping)")
	fl.Int64Var(&s.seed, "seed", 1337, "the seed of every random draw")
	fl.BoolVar(&s.compile, "compile", false, "compile the training step (transforms.Compile)")
	fl.StringVar(&s.remat, "remat", "", "checkpoint each block, saving: dots, mincut or nothing")
	fl.IntVar(&s.evalEvery, "eval-every", 100, "steps between validation losses (0: only at the end)")
	fl.IntVar(&s.evalIters, "eval-iters", 10, "validation batches per validation loss")
	fl.IntVar(&s.logEvery, "log-every", 10, "steps between progress lines (0: none)")
	fl.StringVar(&s.ckpt, "checkpoint", "", "save a checkpoint here every -every steps; resume from it when it exists")
	fl.IntVar(&s.every, "every", 100, "steps between checkpoints")
	fl.IntVar(&s.stopAfter, "stop-after", 0, "stop after this many steps of this run (0: never), to resume later")
	fl.StringVar(&s.initFile, "init", "", "initial parameters from this safetensors file (as checkpoint.Save names them)")
	fl.IntVar(&s.sample, "sample", 0, "sample this many characters after training")
	fl.StringVar(&s.prompt, "prompt", "", "the text sampling continues (default a newline)")
	fl.Float64Var(&s.sampling.Temperature, "temperature", 0.8, "sampling temperature (0: the most likely token)")
	fl.IntVar(&s.sampling.TopK, "top-k", 20, "sample among the k most likely tokens (0: all)")
	fl.StringVar(&s.export, "export", "", "export the sampler to this directory (for examples/peelrun)")
	fl.BoolVar(&s.zero1, "zero1", false, "under mpirun, shard the optimizer state over the processes (ZeRO-1)")
	threads := fl.Int("threads", 0, "kernel threads and GOMAXPROCS (0: all cores)")
	cpuprofile := fl.String("cpuprofile", "", "write a CPU profile of the training to this file")
	fl.BoolVar(&s.quiet, "quiet", false, "print nothing")
	fl.BoolVar(&s.losses, "print-losses", false, "print every step's loss in full (\"loss STEP VALUE\"), for comparisons")
	if err := fl.Parse(args); err != nil {
		return s, err
	}
	if s.preset {
		set := map[string]bool{}
		fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
		p := model.Preset(0)
		for name, dst := range map[string]*int{"layers": &s.cfg.Layers, "heads": &s.cfg.Heads, "width": &s.cfg.Width, "context": &s.cfg.Context} {
			if !set[name] {
				*dst = map[string]int{"layers": p.Layers, "heads": p.Heads, "width": p.Width, "context": p.Context}[name]
			}
		}
		if !set["dropout"] {
			s.cfg.Dropout = p.Dropout
		}
		if !set["batch"] {
			s.batch = 64
		}
	}
	s.cfg.DType = peel.Float32
	if s.f64 {
		s.cfg.DType = peel.Float64
	}
	s.hyper = model.DefaultHyper(s.steps)
	s.hyper.LR, s.hyper.MinLR, s.hyper.WeightDecay, s.hyper.Clip = *lr, *minLR, *wd, *clip
	if *warmup >= 0 {
		s.hyper.Warmup = *warmup
	}
	if _, ok := remats[s.remat]; !ok {
		return s, fmt.Errorf("-remat %q: want dots, mincut or nothing", s.remat)
	}
	if s.every < 1 || s.batch < 1 || s.steps < 0 || s.evalIters < 0 {
		return s, errors.New("-every and -batch must be at least 1, -steps and -eval-iters at least 0")
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
		cpu.SetThreads(*threads)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return s, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return s, err
		}
	}
	return s, nil
}

func main() {
	s, err := parseFlags(os.Args[1:])
	if err != nil {
		log.Fatal(err)
	}
	world := dist.World()
	r := &runner{s: s}
	r.out = func(format string, args ...any) {
		if !s.quiet && world.Rank() == 0 {
			fmt.Printf(format, args...)
		}
	}
	var runErr error
	if world.Size() == 1 {
		_, runErr = r.run()
	} else {
		if world.Rank() == 0 {
			fmt.Printf("data parallel over %d processes (ddp.ValueAndGrad3%s), %d rows each of every batch of %d\n",
				world.Size(), map[bool]string{true: ", ZeRO-1", false: ""}[s.zero1], s.batch/world.Size(), s.batch)
		}
		mesh := dist.NewProcessMesh(dist.MeshAxis("data", world.Size()))
		mesh.RunDevices(func(dv *dist.Device) {
			r.comm = dv.Comm("data")
			_, runErr = r.run()
		})
	}
	pprof.StopCPUProfile()
	if runErr != nil {
		if errors.Is(runErr, errStopped) {
			if world.Rank() == 0 {
				fmt.Println(runErr)
			}
			dist.Finalize()
			return
		}
		log.Fatalf("rank %d: %v", world.Rank(), runErr)
	}
	dist.Finalize()
}
