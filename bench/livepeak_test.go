package bench

import (
	"testing"

	"github.com/peel-ml/peel"
)

var livePeakSink [][]byte

// TestLivePeak checks LivePeak on a run that keeps 16 MiB (counted)
// against one that allocates 64 MiB of garbage a megabyte at a time
// (collected as it goes, so far less than its total is ever live).
func TestLivePeak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the collector continuously")
	}
	keep := LivePeak(func() { livePeakSink = append(livePeakSink, make([]byte, 16<<20)) })
	if keep < 15<<20 { // other garbage may go in the same cycle
		t.Errorf("a run keeping 16 MiB: live peak %d bytes", keep)
	}
	livePeakSink = nil
	garbage := LivePeak(func() {
		for range 64 {
			b := make([]byte, 1<<20)
			b[0] = 1
		}
	})
	if garbage >= 32<<20 {
		t.Errorf("a run of 64 MiB of short-lived garbage: live peak %d bytes, want well under its total", garbage)
	}
}

var tensorPeakSink *peel.Tensor

// TestTensorPeak checks TensorPeak on a run that keeps a 1 MiB result
// (its peak grows by at least that) against one that makes no tensor.
func TestTensorPeak(t *testing.T) {
	x := peel.Full(peel.Float32, 1, 1<<18)
	keep := TensorPeak(func() { tensorPeakSink = peel.Exp(x) })
	if keep < 1<<20 {
		t.Errorf("a run keeping a 1 MiB result: peak tensors %d bytes", keep)
	}
	tensorPeakSink = nil
	if none := TensorPeak(func() {}); none != 0 {
		t.Errorf("a run making no tensor: peak tensors %d bytes", none)
	}
}
