// Package dplp is the short way into the library: train DPLP's transform on
// invariant data, open a budget ledger, and release private top-K
// recommendation lists whose cost is durably recorded before they are
// returned.
//
//	m, err := dplp.Train(ctx, g, prot, dplp.TrainSpec{Score: "aa", Variant: "dplp", EpsP: 0.5})
//	store, err := dplp.OpenStore(ctx, "sqlite:ledger.db")
//	rec, err := dplp.NewRecommender(m, g, prot, dplp.WithStore(store))
//	res, err := rec.Recommend(ctx, []string{"alice"}, 30)                // sticky: re-served free once released
//	res, err = rec.Recommend(ctx, []string{"alice"}, 30, dplp.Fresh())   // a new list, charged again
//
// Guarantees (docs/privacy-model.md): training reads only the public graph
// and the marks, so the trained model is the same in every neighbouring
// graph; each released list of K random picks is (K x eps_p)-protected-pair
// DP for its user and is charged to the ledger in the same call. The
// packages behind the facade are release (the release path), ledger (the
// stores), model (compiled transforms), score (base scores and their
// sensitivities) and calib (calibration).
package dplp

import (
	"context"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/deploy"
)

// TrainSpec says what to train. Zero values take the defaults of `dplp
// train`.
type TrainSpec struct {
	Score   string  // triad score: cn, aa, ra, jc or pa
	Variant string  // dplp, lin (dplp-lin), umnn (dplp-umnn) or dplp-pub
	EpsP    float64 // per-pick epsilon the transform is trained for (> 0)
	Seed    uint64  // seed of the training split, initialisation and noise
	Epochs  int     // 0: the trainer's default
	// MaxQueries bounds the training queries sampled (0: every usable node).
	MaxQueries int
	// NegPerQuery is the number of negatives per training query (0: 200).
	NegPerQuery int
	// OnEpoch, if set, is told the progress of the training after every
	// epoch, on Train's goroutine (see train.Observer); it may cancel
	// Train's context to stop it.
	OnEpoch func(TrainProgress)
}

// TrainProgress is one epoch's report: its number, the planned number of
// epochs, the mean training loss, the held-out AUCs and the best epoch so
// far (train.Progress).
type TrainProgress = train.Progress

// Train trains the transform on invariant data only (the public graph and
// the marks; docs/privacy-model.md §5) and compiles it into a deployable
// model (package train/deploy). The seed fixes the training; it does not
// make released lists seeded. Cancelling ctx stops the training promptly
// (at the latest a few dozen optimiser steps later), and Train returns
// ctx's error.
func Train(ctx context.Context, g *graph.Graph, prot *protect.Set, spec TrainSpec) (*model.Model, error) {
	m, _, err := deploy.Train(ctx, g, prot, deploy.Spec{Score: spec.Score, Variant: spec.Variant, EpsP: spec.EpsP, Seed: spec.Seed, Epochs: spec.Epochs,
		Sample: deploy.SampleConfig{MaxQueries: spec.MaxQueries, NegPerQuery: spec.NegPerQuery}, OnEpoch: spec.OnEpoch})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// OpenStore opens a durable ledger: "sqlite:PATH" (embedded) or a
// PostgreSQL DSN ("postgres://...").
func OpenStore(ctx context.Context, dsn string) (ledger.Store, error) { return ledger.Open(ctx, dsn) }

// NewRecommender releases lists of model m on graph g with marks prot.
func NewRecommender(m *model.Model, g *graph.Graph, prot *protect.Set, opts ...release.Option) (*release.Recommender, error) {
	return release.New(m, g, prot, opts...)
}

// Options of NewRecommender (see package release). WithFresh and
// WithIdempotencyKey set the defaults of every call; Fresh and
// IdempotencyKey choose per call.
var (
	WithStore          = release.WithStore
	WithCap            = release.WithCap
	WithSeed           = release.WithSeed
	WithFresh          = release.WithFresh
	WithScorer         = release.WithScorer
	WithIdempotencyKey = release.WithIdempotencyKey
)

// Per-call options of Recommender.Recommend and Stream (see package
// release): one Recommender serves sticky, fresh and idempotent calls.
var (
	Fresh          = release.Fresh
	IdempotencyKey = release.IdempotencyKey
)
