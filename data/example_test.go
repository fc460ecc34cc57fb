package data_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
)

// Reading a CSV table, saving it as .npy and iterating over shuffled
// minibatches of its rows, one epoch per key.
func Example() {
	csv := "x,y,label\n0.5,1.0,0\n-1.5,2.0,1\n3.0,-0.5,1\n0.0,0.0,0\n2.5,1.5,1\n"
	features, err := data.ReadCSV(strings.NewReader(csv), data.CSVOptions{SkipRows: 1, Columns: []int{0, 1}})
	if err != nil {
		panic(err)
	}
	labels, _ := data.ReadCSV(strings.NewReader(csv), data.CSVOptions{SkipRows: 1, Columns: []int{2}})
	fmt.Println("features:", features.Shape(), "labels:", labels.Shape())

	var buf bytes.Buffer
	if err := data.WriteNPY(&buf, features); err != nil {
		panic(err)
	}
	back, _ := data.ReadNPY(&buf)
	fmt.Println("npy round trip:", back.String() == features.String())

	key := peel.Key(0)
	for epoch := range 2 {
		rows := 0
		for batch := range data.Batches(peel.FoldIn(key, int64(epoch)), 2, false, features, labels) {
			rows += batch[0].Shape()[0]
		}
		fmt.Println("epoch", epoch, "saw", rows, "rows")
	}
	// Output:
	// features: [5 2] labels: [5 1]
	// npy round trip: true
	// epoch 0 saw 5 rows
	// epoch 1 saw 5 rows
}

// Seven examples dealt to the three members of a data-parallel job in
// batches of two: every member gets three examples (the order padded
// with its first two), so two batches of sizes 2 and 1, and no member
// waits for another in a collective.
func ExampleShardBatches() {
	x := peel.FromFloat64s([]float64{0, 1, 2, 3, 4, 5, 6}, 7)
	for rank := range 3 {
		fmt.Print("member ", rank, ":")
		for b := range data.ShardBatches(nil, 2, rank, 3, false, x) {
			fmt.Print(" ", b[0].Float64s())
		}
		fmt.Println()
	}
	// Output:
	// member 0: [0 3] [6]
	// member 1: [1 4] [0]
	// member 2: [2 5] [1]
}
