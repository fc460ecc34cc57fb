// Command peelrun runs an exported peel program (transforms.Export) on
// arrays from a NumPy .npz file and writes its results to another: it
// has none of the Go code that traced the program, only peel.
//
// Argument i of the program is the array named by its leaf path without
// the leading dot ("W", "args[1]"), or "x" for a program of one tensor;
// results are named the same way, "y" for a lone tensor. Without -out it
// prints the program's signature and each result's type and first
// values.
//
//	go run ./examples/digits -export digits-out     # writes classify.peel and test.npz
//	go run ./examples/peelrun -program digits-out/classify.peel -in digits-out/test.npz -out digits-out/out.npz
//	python3 -c "import numpy as n; o=n.load('digits-out/out.npz'); t=n.load('digits-out/test.npz'); print((o['Labels']==t['y']).mean())"
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/transforms"
)

// leafName is the .npz name of a leaf path: without its leading dot, or
// lone for the empty path (a lone tensor).
func leafName(path, lone string) string {
	if path == "" {
		return lone
	}
	return strings.TrimPrefix(path, ".")
}

// readNPZ reads the arrays of an .npz file by name.
func readNPZ(path string) (map[string]*peel.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return data.ReadNPZ(f, st.Size())
}

// run loads the program at prog, runs it on the arrays of the .npz file
// in, and returns its results by name.
func run(prog, in string) (*transforms.Exported, map[string]*peel.Tensor, error) {
	f, err := os.Open(prog)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	e, err := transforms.ReadExported(f)
	if err != nil {
		return nil, nil, err
	}
	arrays, err := readNPZ(in)
	if err != nil {
		return nil, nil, err
	}
	var args []*peel.Tensor
	for _, l := range e.In() {
		name := leafName(l.Path, "x")
		a, ok := arrays[name]
		if !ok {
			var have []string
			for n := range arrays {
				have = append(have, n)
			}
			slices.Sort(have)
			return nil, nil, fmt.Errorf("%s has no array %q for the argument %s (it has %v)", in, name, l, have)
		}
		args = append(args, a)
	}
	var outs []*peel.Tensor
	if err := peel.Catch(func() { outs = e.Call(args...) }); err != nil {
		return nil, nil, err
	}
	res := map[string]*peel.Tensor{}
	for i, l := range e.Out() {
		res[leafName(l.Path, "y")] = outs[i]
	}
	return e, res, nil
}

func main() {
	prog := flag.String("program", "", "the exported program (transforms.Export's bytes)")
	in := flag.String("in", "", "a .npz file of the arguments, by leaf name")
	out := flag.String("out", "", "write the results to this .npz file")
	flag.Parse()
	if *prog == "" || *in == "" {
		flag.Usage()
		os.Exit(2)
	}
	e, res, err := run(*prog, *in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (exported by peel %s)\n", e, e.Producer())
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		if err := data.WriteNPZ(f, res); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
		fmt.Println("results:", *out)
		return
	}
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		r := res[n]
		v := peel.AsType(peel.Reshape(r, r.Size()), peel.Float64).Float64s()
		fmt.Printf("%s %s: %v\n", n, r.TypeString(), v[:min(len(v), 8)])
	}
}
