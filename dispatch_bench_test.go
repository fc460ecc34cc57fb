package peel_test

import (
	"testing"

	"github.com/peel-ml/peel"
)

func BenchmarkDispatchAdd(b *testing.B) {
	x := peel.Ones(peel.Float64, 8)
	y := peel.Ones(peel.Float64, 8)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		peel.Add(x, y)
	}
}

func BenchmarkDispatchTanh(b *testing.B) {
	x := peel.Ones(peel.Float64, 8)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		peel.Tanh(x)
	}
}
