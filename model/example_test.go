package model_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/dplp/dplp/model"
)

// A trainer's fit becomes a model (Compile validates the table and
// normalises it to f(0) = 0, f(1) = 1); Save writes it with a checksum and
// Load reads it back, identical.
func Example() {
	fit := model.Fit{
		Variant:    model.VariantDPLP,
		EpsP:       0.5,
		F:          []float64{0, 1, 3, 4}, // f at x = s/S_max = 0, 1/3, 2/3, 1
		HeldOutAUC: math.NaN(),            // no held-out data
		Epochs:     3,
		BestEpoch:  2,
	}
	m, err := model.Compile(fit, model.Info{Score: "aa", Dataset: "example", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "dplp-model-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "aa.model")
	if err := model.Save(path, m); err != nil {
		fmt.Println(err)
		return
	}
	loaded, err := model.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	id1, _ := m.ID()
	id2, _ := loaded.ID()
	fmt.Println(loaded.Score, loaded.Variant, loaded.EpsP, loaded.F)
	fmt.Println("same model:", id1 == id2)
	// Utility at s = 2 of S_max = 6 (x = 1/3), and the utility's exact
	// sensitivity for Delta_s = 2 (with a tiny margin against rounding; Delta_s = 0:
	// an exact top-K, no noise).
	fmt.Printf("%g %.6f %g\n", loaded.Utility(2, 0, 6), loaded.Delta(2, 6), loaded.Delta(0, 6))
	// Output:
	// aa dplp 0.5 [0 0.25 0.75 1]
	// same model: true
	// 0.25 0.500000 0
}
