package transforms_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// TestInspectorDOT: the compiled MLP step's program in Graphviz's
// language has its inputs, its matrix products, its fused groups as
// clusters and typed edges; where Graphviz is installed, dot accepts it
// and draws an SVG.
func TestInspectorDOT(t *testing.T) {
	type mlp struct{ L1, L2 nn.LinearParams }
	ks := peel.SplitKeys(peel.Key(0), 2)
	p := mlp{nn.InitLinear(ks[0], peel.Float32, 8, 16), nn.InitLinear(ks[1], peel.Float32, 16, 4)}
	x := peel.Ones(peel.Float32, 5, 8)
	y := peel.FromInt64s([]int64{0, 1, 2, 3, 0})
	var ins transforms.Inspector
	_, _, line, _ := runtime.Caller(0) // the model is on line+3, the update on line+5
	step := transforms.Compile3(func(p mlp, x, y *peel.Tensor) tree.Tuple2[mlp, *peel.Tensor] {
		l, g := transforms.ValueAndGrad3(func(p mlp, x, y *peel.Tensor) *peel.Tensor {
			return nn.CrossEntropy(nn.Linear(p.L2, nn.Linear(p.L1, x).Tanh()), y)
		})(p, x, y)
		return tree.Pack2(tree.Map2(func(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(0.1)) }, p, g), l)
	}, transforms.Inspect(&ins))
	step(p, x, y)
	dot := ins.DOT(p, x, y)
	// The user's ops and lines (the trace records sites for DOT).
	for _, want := range []string{"digraph", "in0 [shape=ellipse", "dot_general", "subgraph cluster_", "f32[5,16]", "doubleoctagon", fmt.Sprintf("nn.Linear dot_test.go:%d", line+3), fmt.Sprintf("nn.CrossEntropy dot_test.go:%d", line+3), fmt.Sprintf("Tensor.Sub dot_test.go:%d", line+5)} {
		if !strings.Contains(dot, want) {
			t.Errorf("the DOT lacks %q", want)
		}
	}
	if strings.Count(dot, "{") != strings.Count(dot, "}") {
		t.Errorf("unbalanced braces")
	}
	g := interp.Trace(func(xs []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Sum(peel.Tanh(xs[0]))} }, []*peel.Tensor{x}, interp.RecordSites())
	gdot := g.DOT("tanh_sum")
	for _, want := range []string{"tanh", "reduce_sum", "in0 -> e0", "out0", "peel.Tanh dot_test.go:", "peel.Sum dot_test.go:"} {
		if !strings.Contains(gdot, want) {
			t.Errorf("the graph's DOT lacks %q:\n%s", want, gdot)
		}
	}
	bin, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI needs Graphviz's dot (graphviz) for this test")
		}
		t.Skip("Graphviz's dot is not installed")
	}
	for _, src := range []string{dot, gdot} {
		svg := filepath.Join(t.TempDir(), "p.svg")
		cmd := exec.Command(bin, "-Tsvg", "-o", svg)
		cmd.Stdin = strings.NewReader(src)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dot -Tsvg: %v\n%s", err, out)
		}
		if b, _ := os.ReadFile(svg); !strings.Contains(string(b), "<svg") {
			t.Fatalf("dot wrote no SVG")
		}
	}
}
