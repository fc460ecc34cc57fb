package model_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/gpt/model"
	"github.com/peel-ml/peel/transforms"
)

// A GPT on a tiny corpus: a vocabulary, batches, a few compiled
// training steps, then a sample from the KV-cache sampler.
func Example() {
	text := "abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc"
	v := model.NewVocab(text, false)
	toks, _ := v.Encode(text)
	c := model.Config{Vocab: v.Size(), Context: 8, Layers: 1, Heads: 2, Width: 16, DType: peel.Float32}
	p := model.Init(peel.Key(0), c)
	h := model.DefaultHyper(60)
	h.LR = 1e-2
	opt := model.Optimizer(h)
	step := model.Compiled(model.NewStep(c, opt, nil))
	s := opt.Init(p)
	var first, last float64
	for i := range 60 {
		x, y := model.Batch(peel.FoldIn(peel.Key(1), int64(i)), toks, 8, c.Context)
		var l *peel.Tensor
		p, s, l = step(p, s, x, y, peel.Key(2)).Unpack()
		if i == 0 {
			first = l.Item()
		}
		last = l.Item()
	}
	fmt.Printf("%d parameters; the loss fell: %v\n", p.Count(), last < first/4)
	gen := transforms.Compile3(func(p model.Params, prompt, key *peel.Tensor) *peel.Tensor {
		return model.Generate(c, p, prompt, key, 6, model.Sampling{Temperature: 0})
	})
	prompt, _ := v.Encode("ab")
	out := gen(p, peel.FromInt64s(prompt, 1, len(prompt)), peel.Key(3))
	fmt.Printf("ab → %q\n", v.Decode(out.Int64s()))
	// Output:
	// 3488 parameters; the loss fell: true
	// ab → "cabcab"
}
