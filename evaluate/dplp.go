package evaluate

import (
	"fmt"
	"strings"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protocol"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train"
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
	// OnEpoch is passed to the trainer.
	OnEpoch func(epoch int, loss, heldOutAUC float64)
}

// TrainSummary describes a training run.
type TrainSummary struct {
	Epochs, BestEpoch int
	HeldOutAUC        float64
	TrainQueries      int
	Seconds           float64
}

// ParseVariant accepts the variant names of the CLI and experiments, in
// any case and with surrounding spaces: "dplp", "lin" or "dplp-lin", "umnn"
// or "dplp-umnn", "dplp-pub".
func ParseVariant(s string) (train.Variant, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	switch l {
	case "dplp-lin":
		l = "lin"
	case "dplp-umnn":
		l = "umnn"
	}
	v, err := train.ParseVariant(l)
	if err != nil {
		return "", fmt.Errorf("unknown DPLP variant %q (want dplp, lin or dplp-lin, umnn or dplp-umnn, dplp-pub)", s)
	}
	return v, nil
}

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
// TrainingDataFrom); name is the predictor's name stored in the model.
func TrainModelFrom(s *protocol.Split, sc *score.Scorer, name, variant string, eps float64, opt TrainOptions, seed uint64) (*model.Model, TrainSummary, error) {
	v, err := ParseVariant(variant)
	if err != nil {
		return nil, TrainSummary{}, err
	}
	every := opt.HeldOutEvery
	if every == 0 {
		every = 5
	}
	publicOnly := opt.Reference && v == train.Lin
	tr, held, err := TrainingDataFrom(s, sc, every, publicOnly)
	if err != nil {
		return nil, TrainSummary{}, err
	}
	cfg := train.DefaultConfig(v, eps)
	if opt.Config != nil {
		cfg = *opt.Config
		cfg.Variant, cfg.Eps = v, eps
	}
	if opt.Epochs > 0 {
		cfg.Epochs = opt.Epochs
	}
	cfg.OnEpoch = opt.OnEpoch
	start := time.Now()
	res, err := train.Train(cfg, tr, held, randx.Derive(seed, 0x7472, uint64(sc.Kind())))
	if err != nil {
		return nil, TrainSummary{}, fmt.Errorf("training %s on %s: %w", v, name, err)
	}
	sum := TrainSummary{BestEpoch: res.BestEpoch, HeldOutAUC: res.BestAUC, TrainQueries: res.TrainQueries, Seconds: time.Since(start).Seconds()}
	if n := len(res.History); n > 0 {
		sum.Epochs = res.History[n-1].Epoch
	}
	sd := seed
	m, err := model.New(res, model.Info{Score: name, Dataset: fmt.Sprintf("%s protocol, %d training queries", s.Kind, len(tr)), Seed: &sd})
	if err != nil {
		return nil, sum, err
	}
	return m, sum, nil
}

// TrainTransform is TrainModel returning the model as a calib.Transform.
func TrainTransform(s *protocol.Split, kind score.Kind, variant string, eps float64, opt TrainOptions, seed uint64) (calib.Transform, TrainSummary, error) {
	m, sum, err := TrainModel(s, kind, variant, eps, opt, seed)
	if err != nil {
		return nil, sum, err
	}
	return m, sum, nil
}
