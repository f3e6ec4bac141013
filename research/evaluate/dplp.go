package evaluate

import (
	"context"
	"fmt"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/deploy"
)

// TrainOptions adjusts TrainTransform.
type TrainOptions struct {
	Epochs int // 0: train.DefaultConfig's
	// Reference: the authors' data choices in the reference protocol
	// (DPLP-Lin trains on non-protected positives only, the other variants
	// on all dev pairs). Ignored for the clean protocol, whose training
	// pairs are all non-protected.
	Reference bool
	// HeldOutEvery puts every n-th training query in the held-out set
	// (0: 5, i.e. 20%).
	HeldOutEvery int
	// Config, when non-nil, replaces train.DefaultConfig (Variant and Eps
	// are still set from the arguments).
	Config *train.Config
	// OnEpoch, if set, observes the training run (train.Observer).
	OnEpoch train.Observer
	// Context, when non-nil, is the training run's context: cancelling it
	// stops the training promptly with its error (train.Train). nil means
	// context.Background(). It is an option rather than a parameter so the
	// research harness's training hooks keep their signature.
	Context context.Context
	// PseudoSigma is the fraction of the public training graph's edges
	// marked pseudo-protected for dplp-pub (PseudoProtect): 0 means the
	// split's sigma (or, for a deployment split, the invariant share of
	// marks, see PseudoProtect); negative turns pseudo-protection off.
	PseudoSigma float64
	// SelectK is the release K the dplp-pub epoch is selected for (AUC@K;
	// 0: train.DefaultSelectK = 30).
	SelectK int
}

// pairsOf is the split's training data in the deployment trainer's form.
func pairsOf(s *protocol.Split) *deploy.Pairs {
	return &deploy.Pairs{Train: s.Train, Marks: s.TrainProt, Queries: s.TrainQueries, Pos: s.DevPos, Neg: s.DevNeg, Sigma: s.Config.Sigma}
}

// PseudoProtect is deploy.PseudoProtect on the split's training data.
func PseudoProtect(s *protocol.Split, sigma float64, seed uint64) (*protect.Set, error) {
	return deploy.PseudoProtect(pairsOf(s), sigma, seed)
}

// TrainSummary describes a training run.
type TrainSummary = deploy.Summary

// ParseVariant accepts the variant names of the CLI and experiments
// (deploy.ParseVariant).
func ParseVariant(s string) (train.Variant, error) { return deploy.ParseVariant(s) }

// TrainModel trains variant on the split's training data for base score
// kind at eps_p and compiles the deployable model (exactly monotone table,
// exact Delta_f). All randomness derives from seed.
func TrainModel(s *protocol.Split, kind score.Kind, variant string, eps float64, opt TrainOptions, seed uint64) (*model.Model, TrainSummary, error) {
	sc, err := score.New(s.Train, s.TrainProt, kind)
	if err != nil {
		return nil, TrainSummary{}, err
	}
	return TrainModelFrom(s, sc, strings.ToLower(kind.String()), variant, eps, opt, seed)
}

// TrainModelFrom is TrainModel with a prepared scorer of split.Train (see
// TrainingDataFrom); name is the predictor's name stored in the model. The
// training itself is the deployment trainer's (deploy.Model); the reference
// protocol keeps the authors' data choices (no pseudo-protection, DPLP-Lin
// on non-protected positives when opt.Reference).
func TrainModelFrom(s *protocol.Split, sc *score.Scorer, name, variant string, eps float64, opt TrainOptions, seed uint64) (*model.Model, TrainSummary, error) {
	v, err := ParseVariant(variant)
	if err != nil {
		return nil, TrainSummary{}, err
	}
	o := deploy.Options{Epochs: opt.Epochs, HeldOutEvery: opt.HeldOutEvery, Config: opt.Config, OnEpoch: opt.OnEpoch,
		PseudoSigma: opt.PseudoSigma, SelectK: opt.SelectK, Dataset: fmt.Sprintf("%s protocol", s.Kind)}
	if s.Kind == protocol.Reference {
		o.PseudoSigma = -1
	}
	if opt.Reference && v == train.Lin {
		o.PosOf = s.DevPosPublic
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return deploy.Model(ctx, pairsOf(s), sc, name, variant, eps, o, seed)
}

// TrainTransform is TrainModel returning the model as a calib.Transform.
func TrainTransform(s *protocol.Split, kind score.Kind, variant string, eps float64, opt TrainOptions, seed uint64) (calib.Transform, TrainSummary, error) {
	m, sum, err := TrainModel(s, kind, variant, eps, opt, seed)
	if err != nil {
		return nil, sum, err
	}
	return m, sum, nil
}
