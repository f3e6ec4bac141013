package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/dplp/dplp/transform"
)

// Variant names what is trained.
type Variant string

// The variants (paper Sections 4.2-4.3 and appendix; privacy-model §10).
const (
	DPLP    Variant = "dplp"     // f = UMNN on the power basis
	Lin     Variant = "lin"      // f = power basis alone (DPLP-Lin)
	UMNN    Variant = "umnn"     // f = UMNN on raw x (DPLP-UMNN)
	DPLPPub Variant = "dplp-pub" // lexicographic: rank by x_pub exactly, f = DPLP on x within ties of x_pub
)

// Variants lists every variant.
func Variants() []Variant { return []Variant{DPLP, Lin, UMNN, DPLPPub} }

// ParseVariant checks a variant name.
func ParseVariant(s string) (Variant, error) {
	for _, v := range Variants() {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("train: unknown variant %q (want dplp, lin, umnn or dplp-pub)", s)
}

// Kind is the transform family of f (and h).
func (v Variant) Kind() transform.Kind {
	switch v {
	case Lin:
		return transform.KindLin
	case UMNN:
		return transform.KindUMNN
	default:
		return transform.KindDPLP
	}
}

// Public reports whether the variant uses the public score: dplp-pub ranks
// by it exactly (the lexicographic mechanism) and trains f on its ties.
func (v Variant) Public() bool { return v == DPLPPub }

// Selection is the held-out criterion for keeping the best epoch.
type Selection string

const (
	// SelectNoisy: mean full-list AUC of the noisy utility q = u/Delta_f + (2/eps_p) G,
	// with one fixed Gumbel draw per held-out candidate reused every epoch
	// (paired comparison across epochs), the deployed compiled table and its
	// exact Delta. This is what the mechanism releases.
	SelectNoisy Selection = "noisy"
	// SelectClean: mean full-list AUC of the noise-free utility. For a single
	// strictly increasing f this equals the base score's AUC at every epoch,
	// so it only discriminates for dplp-pub.
	SelectClean Selection = "clean"
	// SelectTopK: mean AUC@K (the paper's metric, ranking.Evaluate) of the
	// list the mechanism releases from each held-out query's positives and
	// negatives, K = Config.SelectK, with one fixed Gumbel draw per
	// candidate reused every epoch. The default for dplp-pub.
	SelectTopK Selection = "auc-at-k"
)

// DefaultSelectK is the K of SelectTopK when Config.SelectK is 0: the
// release K of the experiments and of `dplp recommend`.
const DefaultSelectK = 30

// Config controls Train. Start from DefaultConfig: Train does not fill in
// zero values except the transform fields (Hidden, QuadNodes, Tau,
// Exponents), where zero/nil selects the transform package's defaults.
type Config struct {
	Variant     Variant   `json:"variant"`
	Eps         float64   `json:"eps_p"`      // eps_p > 0; +Inf trains without noise
	Margin      float64   `json:"margin"`     // rho of the hinge
	LR          float64   `json:"lr"`         // Adam step size
	Beta1       float64   `json:"adam_beta1"` // Adam moment decay rates and epsilon
	Beta2       float64   `json:"adam_beta2"`
	AdamEps     float64   `json:"adam_eps"`
	WeightDecay float64   `json:"weight_decay"`       // L2 coefficient added to the gradient
	Epochs      int       `json:"epochs"`             // maximum number of epochs
	Patience    int       `json:"patience"`           // stop after this many epochs without held-out improvement; 0 = never
	Select      Selection `json:"select"`             // held-out criterion
	SelectK     int       `json:"select_k,omitempty"` // K of SelectTopK (0: DefaultSelectK)
	DeltaGrid   int       `json:"delta_grid"`         // grid points of the interpolant whose Delta approximates Delta_f in training
	TableGrid   int       `json:"table_grid"`         // compiled-table points for held-out evaluation (deploy with the same, model.Info.Grid)
	ScaleAnchor float64   `json:"scale_anchor"`       // weight of ln(f(1)-f(0))^2, pins f's free scale; 0 = off
	Quantize    int       `json:"quantize"`           // if > 1, snap training x to this many uniform points (bounds distinct values for continuous scores); 0 = exact
	Hidden      []int     `json:"hidden,omitempty"`
	QuadNodes   int       `json:"quad_nodes,omitempty"`
	Tau         float64   `json:"tau,omitempty"`
	Exponents   []float64 `json:"exponents,omitempty"`

	// OnEpoch, if set, observes the run: Train calls it after every epoch
	// (see Observer). It is not data: models do not record it.
	OnEpoch Observer `json:"-"`
}

// DefaultConfig returns the authors' optimiser settings (reference §5:
// Adam, lr 0.1, weight decay 1e-5, margin 0.1) for the given variant and
// eps_p, 30 epochs, patience 5 and noisy held-out selection (dplp-pub:
// AUC@30 of its lexicographic lists).
func DefaultConfig(v Variant, eps float64) Config {
	c := Config{
		Variant:     v,
		Eps:         eps,
		Margin:      0.1,
		LR:          0.1,
		Beta1:       0.9,
		Beta2:       0.999,
		AdamEps:     1e-8,
		WeightDecay: 1e-5,
		Epochs:      30,
		Patience:    5,
		Select:      SelectNoisy,
		DeltaGrid:   64,
		ScaleAnchor: 1e-3,
		TableGrid:   transform.DefaultGrid,
	}
	if v == DPLPPub {
		c.Select, c.SelectK = SelectTopK, DefaultSelectK
	}
	return c
}

// Spec is the transform specification implied by the config.
func (c Config) Spec() transform.Spec {
	return transform.Spec{
		Kind:      c.Variant.Kind(),
		Exponents: c.Exponents,
		Tau:       c.Tau,
		Hidden:    c.Hidden,
		QuadNodes: c.QuadNodes,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if _, err := ParseVariant(string(c.Variant)); err != nil {
		return err
	}
	finitePos := func(name string, x float64) error {
		if !(x > 0) || math.IsInf(x, 0) {
			return fmt.Errorf("train: %s = %v, want positive and finite (start from DefaultConfig)", name, x)
		}
		return nil
	}
	if !(c.Eps > 0) {
		return fmt.Errorf("train: eps_p = %v, want > 0", c.Eps)
	}
	if err := finitePos("LR", c.LR); err != nil {
		return err
	}
	if err := finitePos("AdamEps", c.AdamEps); err != nil {
		return err
	}
	if !(c.Margin >= 0) || math.IsInf(c.Margin, 0) {
		return fmt.Errorf("train: margin = %v, want >= 0 and finite", c.Margin)
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) {
		return fmt.Errorf("train: Adam betas (%v, %v) must lie in [0, 1)", c.Beta1, c.Beta2)
	}
	if !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0) {
		return fmt.Errorf("train: weight decay = %v, want >= 0 and finite", c.WeightDecay)
	}
	if c.Epochs < 1 {
		return errors.New("train: Epochs must be >= 1 (start from DefaultConfig)")
	}
	if c.Patience < 0 {
		return errors.New("train: Patience must be >= 0")
	}
	if c.Select != SelectNoisy && c.Select != SelectClean && c.Select != SelectTopK {
		return fmt.Errorf("train: unknown selection %q (want noisy, clean or auc-at-k)", c.Select)
	}
	if c.SelectK < 0 {
		return fmt.Errorf("train: SelectK = %d, want >= 0", c.SelectK)
	}
	if c.DeltaGrid < 2 || c.DeltaGrid > 1<<16 {
		return fmt.Errorf("train: DeltaGrid = %d, want 2..65536", c.DeltaGrid)
	}
	if c.TableGrid < 2 || c.TableGrid > 1<<24 {
		return fmt.Errorf("train: TableGrid = %d, want 2..2^24", c.TableGrid)
	}
	if !(c.ScaleAnchor >= 0) || math.IsInf(c.ScaleAnchor, 0) {
		return fmt.Errorf("train: ScaleAnchor = %v, want >= 0 and finite", c.ScaleAnchor)
	}
	if c.Quantize < 0 || c.Quantize == 1 || c.Quantize > 1<<24 {
		return fmt.Errorf("train: Quantize = %d, want 0 (off) or 2..2^24", c.Quantize)
	}
	return nil
}
