package dplp_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// Train reports every epoch to the observer, and a context cancelled from
// the observer stops it before the next epoch.
func TestTrainObserverAndCancel(t *testing.T) {
	lg, err := gen.Latent(400, 2, 0.1, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	prot, err := protect.Synthetic(lg.Graph, 0.3, 0, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	var epochs []int
	spec := dplp.TrainSpec{Score: "aa", Variant: "dplp", EpsP: 0.5, Epochs: 3, OnEpoch: func(p dplp.TrainProgress) {
		epochs = append(epochs, p.Epoch)
		if p.Epochs != 3 {
			t.Errorf("progress %+v: want 3 planned epochs", p)
		}
	}}
	if _, err := dplp.Train(context.Background(), lg.Graph, prot, spec); err != nil || len(epochs) != 3 || epochs[2] != 3 {
		t.Fatalf("err %v, epochs reported %v", err, epochs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	epochs = epochs[:0]
	spec.OnEpoch = func(p dplp.TrainProgress) {
		epochs = append(epochs, p.Epoch)
		cancel()
	}
	m, err := dplp.Train(ctx, lg.Graph, prot, spec)
	if !errors.Is(err, context.Canceled) || m != nil || len(epochs) != 1 {
		t.Fatalf("model %v, err %v, epochs reported %v: want context.Canceled after one epoch", m != nil, err, epochs)
	}
}

// TestTrainRefusesBadSpecs: the library refuses what the command line
// refuses (eps outside accountant's range, negative counts).
func TestTrainRefusesBadSpecs(t *testing.T) {
	lg, err := gen.Latent(120, 2, 0.15, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	prot, err := protect.Synthetic(lg.Graph, 0.3, 0, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []dplp.TrainSpec{
		{Score: "aa", EpsP: 1e-320},
		{Score: "aa", EpsP: math.Inf(1)},
		{Score: "aa", EpsP: math.NaN()},
		{Score: "aa", EpsP: 2e6},
		{Score: "aa", EpsP: 0.5, Epochs: -1},
		{Score: "aa", EpsP: 0.5, MaxQueries: -3},
		{Score: "aa", EpsP: 0.5, NegPerQuery: -1},
	} {
		if _, err := dplp.Train(context.Background(), lg.Graph, prot, spec); err == nil {
			t.Errorf("%+v accepted", spec)
		}
	}
}
