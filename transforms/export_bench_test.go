package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// benchClassifier is an MLP 784-128-10 classifier of a batch of 64 with
// its weights captured (what examples/digits exports, larger).
func benchClassifier() (func(*peel.Tensor) *peel.Tensor, *peel.Tensor) {
	k := peel.SplitKeys(peel.Key(1), 4)
	w1, b1 := peel.Normal(k[0], peel.Float32, 784, 128), peel.Normal(k[1], peel.Float32, 128)
	w2, b2 := peel.Normal(k[2], peel.Float32, 128, 10), peel.Normal(k[3], peel.Float32, 10)
	f := func(x *peel.Tensor) *peel.Tensor {
		h := peel.ReLU(peel.Add(peel.MatMul(x, w1), b1))
		return peel.ArgMax(peel.Add(peel.MatMul(h, w2), b2), 1)
	}
	return f, peel.Normal(peel.Key(2), peel.Float32, 64, 784)
}

// BenchmarkExport: tracing, optimizing and encoding the classifier.
func BenchmarkExport(b *testing.B) {
	f, x := benchClassifier()
	b.ReportAllocs()
	for b.Loop() {
		transforms.Export(f, x)
	}
	b.ReportMetric(float64(len(transforms.Export(f, x).Bytes())), "file-bytes")
}

// BenchmarkLoadExported: decoding, type-checking and building the
// program of the classifier's file.
func BenchmarkLoadExported(b *testing.B) {
	f, x := benchClassifier()
	data := transforms.Export(f, x).Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := transforms.LoadExported(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExportedCall and BenchmarkCompiledCall: a loaded program runs
// as the compiled function does (the same optimized graph and program).
func BenchmarkExportedCall(b *testing.B) {
	f, x := benchClassifier()
	e, err := transforms.LoadExported(transforms.Export(f, x).Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Call(x)
	}
}

func BenchmarkCompiledCall(b *testing.B) {
	f, x := benchClassifier()
	c := transforms.Compile(f)
	c(x)
	b.ReportAllocs()
	for b.Loop() {
		c(x)
	}
}
