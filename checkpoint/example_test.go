package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/nn"
)

func Example() {
	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "layer.safetensors")

	p := nn.InitLinear(peel.Key(0), peel.Float32, 3, 2)
	if err := checkpoint.Save(path, p); err != nil {
		fmt.Println(err)
		return
	}
	q, err := checkpoint.Load(path, p) // p gives the structure, shapes and dtypes
	fmt.Println(err, q.W.TypeString(), q.B.TypeString())

	f, _ := checkpoint.Open(path)
	defer f.Close()
	fmt.Println(f.Names(), f.Metadata["format"])
	// Output:
	// <nil> f32[3,2] f32[2]
	// [B W] peel
}
