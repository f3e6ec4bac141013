package evaluate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
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
	// PseudoSigma is the fraction of the public training graph's edges
	// marked pseudo-protected for dplp-pub (PseudoProtect): 0 means the
	// split's sigma (or, for a deployment split, the invariant share of
	// marks, see PseudoProtect); negative turns pseudo-protection off.
	PseudoSigma float64
	// SelectK is the release K the dplp-pub epoch is selected for (AUC@K;
	// 0: train.DefaultSelectK = 30).
	SelectK int
}

// PseudoProtect returns the marks dplp-pub trains with: the split's
// TrainProt plus a seeded fraction sigma of the edges of the public
// training graph s.Train, marked pseudo-protected. Pseudo-protected edges
// stay in the graph, so they count in s but not in s_pub, and they raise
// Delta_s(u) as real marks do at release: the training pairs then see
// private evidence (s > s_pub) as the release does, and f learns what it is
// worth. Only invariant data is read (s.Train is the public graph minus
// dev positives, TrainProt the public marks) and the draw uses seed alone,
// so neighbouring graphs give identical marks.
//
// sigma <= 0 selects the split's Config.Sigma when set, otherwise (a
// deployment split) the invariant share of marks |marks| / (|E(Train)| +
// |marks|), capped at 0.5 (marks include protected non-edges, so this
// over-estimates the protected share of edges).
func PseudoProtect(s *protocol.Split, sigma float64, seed uint64) (*protect.Set, error) {
	if sigma <= 0 {
		sigma = s.Config.Sigma
	}
	if sigma <= 0 {
		m := float64(s.TrainProt.Len())
		sigma = min(0.5, m/(float64(s.Train.M())+m))
	}
	pseudo, err := protect.Synthetic(s.Train, sigma, 0, randx.Derive(seed, 0x70736575646f))
	if err != nil {
		return nil, err
	}
	pairs := append(s.TrainProt.Pairs(), pseudo.Pairs()...)
	return protect.New(s.Train.N(), pairs)
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
	if v == train.DPLPPub && s.Kind != protocol.Reference && opt.PseudoSigma >= 0 && slices.Contains(score.Kinds(), sc.Kind()) {
		// Triad scores: rescore the public training graph with
		// pseudo-protected marks so that s differs from s_pub as at
		// release (PseudoProtect). Other predictors keep their scorer.
		marks, err := PseudoProtect(s, opt.PseudoSigma, seed)
		if err != nil {
			return nil, TrainSummary{}, err
		}
		if sc, err = score.New(s.Train, marks, sc.Kind()); err != nil {
			return nil, TrainSummary{}, err
		}
	}
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
	if opt.SelectK > 0 {
		cfg.SelectK = opt.SelectK
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
