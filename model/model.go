// Package model stores a trained DPLP transform for deployment: the
// compiled monotone tables (privacy-model §5) and how they were obtained,
// in a versioned JSON file protected by a SHA-256 checksum.
//
// File layout:
//
//	{"format_version": 1, "model": {...}, "sha256": "<hex>"}
//
// The checksum is over the canonical (compact encoding/json) form of
// {"format_version": ..., "model": ...}, so the file may be re-indented
// but any change to its content is detected. The checksum detects
// corruption (truncation, flipped bytes, a careless hand edit), not
// deliberate edits: it is not a signature, and a file edited with its
// checksum recomputed loads like any other (only the invariants Compile and
// Load check, such as a monotone table, still apply). Protect model files
// you deploy like code: by file permissions or a signature kept elsewhere.
package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/transform"
)

// FormatVersion is the file format this package writes and reads.
const FormatVersion = 1

// Errors returned (wrapped) by Load.
var (
	ErrVersion   = errors.New("model: unsupported format version")
	ErrChecksum  = errors.New("model: checksum mismatch (file corrupted or edited)")
	ErrMalformed = errors.New("model: malformed model file")
	// ErrOldPublic: a dplp-pub model with a public transform h, from before
	// the lexicographic mechanism. It is refused rather than released
	// under the old utility h(s_pub) + f(s), which could collapse to the
	// plain exponential mechanism (docs/privacy-model.md §11).
	ErrOldPublic = errors.New("model: this dplp-pub model has a public transform h (utility h(s_pub) + f(s), trained before the lexicographic DPLP-pub mechanism); retrain it with `dplp train --variant dplp-pub` (the new model has f only and ranks by s_pub exactly)")
)

// Variant names the DPLP variant a model's transform was trained for (the
// trainer's variant names, as stored in model files).
type Variant string

// The variants.
const (
	VariantDPLP    Variant = "dplp"     // f = UMNN on the power basis
	VariantLin     Variant = "lin"      // f = power basis alone (DPLP-Lin)
	VariantUMNN    Variant = "umnn"     // f = UMNN on raw x (DPLP-UMNN)
	VariantDPLPPub Variant = "dplp-pub" // lexicographic: rank by s_pub exactly, f within ties
	// VariantList is the list-level mechanism dplp-list (mech/list,
	// docs/privacy-model.md §16): no transform; one Laplace release of the
	// private evidence vector per list, charged List.Eps whatever K.
	VariantList Variant = "dplp-list"
)

// ParseVariant accepts a variant name in any case and with surrounding
// spaces: "dplp", "lin" or "dplp-lin", "umnn" or "dplp-umnn", "dplp-pub",
// "dplp-list".
func ParseVariant(s string) (Variant, error) {
	switch l := strings.ToLower(strings.TrimSpace(s)); l {
	case "dplp-lin":
		return VariantLin, nil
	case "dplp-umnn":
		return VariantUMNN, nil
	case string(VariantDPLP), string(VariantLin), string(VariantUMNN), string(VariantDPLPPub), string(VariantList):
		return Variant(l), nil
	}
	return "", fmt.Errorf("model: unknown variant %q (want dplp, lin or dplp-lin, umnn or dplp-umnn, dplp-pub, dplp-list)", s)
}

// ListLevel reports whether releases with the variant are list-level
// (dplp-list: one charge per list whatever K) rather than per pick.
func (v Variant) ListLevel() bool { return v == VariantList }

// Lexicographic reports whether releases with the variant rank by the
// public score exactly and apply the exponential mechanism on f(s) only
// within groups of equal s_pub (dplp-pub; docs/privacy-model.md §11).
func (v Variant) Lexicographic() bool { return v == VariantDPLPPub }

// Model is a deployable model: a per-pick transform (variants dplp, lin,
// umnn, dplp-pub: EpsP, Grid and F set, List nil) or a list-level model
// (variant dplp-list: List set, EpsP, Grid and F absent). Utility and Delta
// are safe for concurrent use.
//
// The privacy unit (Unit, docs/privacy-model.md §16) is recorded by every
// model written since units exist: "party" for per-pick models (their
// calibration, Delta_s(u), is a party-unit bound, and a party-unit
// guarantee implies the same pair-unit one), "party" or "pair" for
// dplp-list. Files written before have no unit field and are party-unit
// models; they load, and keep their checksum, unchanged (the new fields are
// omitted when empty, so the checksummed encoding of an old model is the
// same bytes).
type Model struct {
	Score   string    `json:"score"` // base score name, e.g. "aa"
	Variant Variant   `json:"variant"`
	EpsP    float64   `json:"eps_p,omitempty"` // eps_p the transform was trained for (per-pick models)
	Grid    int       `json:"grid,omitempty"`  // table points over x = s/S_max in [0, 1] (per-pick models)
	F       []float64 `json:"f,omitempty"`     // table of f (per-pick models)
	// Unit is the privacy unit of the model's guarantee: "party", "pair"
	// (dplp-list only) or "" (a file from before units: party).
	Unit string `json:"unit,omitempty"`
	// List is the list-level mechanism of a dplp-list model; nil otherwise.
	List *ListSpec `json:"list,omitempty"`
	// H is the public transform h of dplp-pub models written before the
	// lexicographic mechanism (utility h(s_pub) + f(s)). Such files no
	// longer load (see ErrOldPublic); the field stays so that the refusal
	// can say why.
	H []float64 `json:"h,omitempty"`
	// Predictor is the full base-predictor pipeline the transform was
	// trained on (name and every option), so a release needs no predictor
	// flags and refuses conflicting ones. Absent in files written before it
	// existed.
	Predictor *PredictorSpec `json:"predictor,omitempty"`
	Meta      Metadata       `json:"meta"`

	f   *transform.Table
	lex bool
}

// ListSpec is what a dplp-list model releases with (mech/list): the
// private evidence of Evidence (a triad score: CN's protected-wedge count
// for cn, aa and ra, the score's own evidence for jc and pa) is released
// once per list with Laplace noise of scale L1(u)/Eps under the model's
// unit, and the list is ranked by Combine of the model's score's public
// part and the noisy evidence. Eps is the charge of one list whatever its
// length (0 when Combine.W = 0 or L1(u) = 0). Combine, Rho and the scales
// were fitted on invariant data (train/deploy.TrainList: the public
// training graph with pseudo-protected edges, at noise level Eps and list
// length FitK).
type ListSpec struct {
	Eps      float64      `json:"eps"`      // pure eps per list (> 0)
	Evidence string       `json:"evidence"` // triad score whose evidence is released
	Combine  list.Combine `json:"combine"`  // post-processing, fixed before any release
	// Rho is the posterior family's prior scale fitted with (private
	// evidence per public wedge, invariant); Combine.Rho is the value used.
	Rho      float64 `json:"rho"`
	FitK     int     `json:"fit_k"`     // list length the combination was fitted for
	PubScale float64 `json:"pub_scale"` // training public scores' rescaling (list.MeanRatio)
	EvScale  float64 `json:"ev_scale"`  // training evidence's rescaling
	// Fit reports the training AUC@FitK of the chosen combination and of
	// public-only (W = 0).
	Fit *list.FitReport `json:"fit,omitempty"`
}

// PredictorSpec describes a base predictor and its options (see package
// predict): a triad score (cn, aa, ra, jc, pa), an embedding method with its
// link classifier, or a score file with its declared range.
type PredictorSpec struct {
	Name    string  `json:"name"`              // cn, aa, ..., node2vec, ..., file:PATH
	Feature string  `json:"feature,omitempty"` // link-classifier edge feature (embeddings)
	Dim     int     `json:"dim,omitempty"`     // embedding dimension (0: the method's default)
	Epochs  int     `json:"epochs,omitempty"`  // gcn/prune epochs (0: default)
	P       float64 `json:"p,omitempty"`       // node2vec return parameter
	Q       float64 `json:"q,omitempty"`       // node2vec in-out parameter
	Lo      float64 `json:"lo,omitempty"`      // file scores: declared range
	Hi      float64 `json:"hi,omitempty"`
	Seed    uint64  `json:"seed,omitempty"` // embedding and classifier seed
}

// Metadata records how the model was trained.
type Metadata struct {
	// Config is the trainer's configuration as recorded (for models
	// trained by package train, its train.Config as JSON). It is kept
	// verbatim (compacted), so files from any trainer version load
	// unchanged.
	Config         json.RawMessage `json:"config"`
	Epochs         int             `json:"epochs"` // epochs run
	BestEpoch      int             `json:"best_epoch"`
	HeldOutAUC     *float64        `json:"held_out_auc,omitempty"` // at BestEpoch; absent without held-out data
	EarlyStopped   bool            `json:"early_stopped"`
	TrainQueries   int             `json:"train_queries"`
	SkippedQueries int             `json:"skipped_queries"`
	Seed           *uint64         `json:"seed,omitempty"` // absent: crypto-seeded run
	Dataset        string          `json:"dataset"`        // free-form description of the training data
	// Data is the fingerprint of the invariant data the model was trained
	// on (protect.Fingerprint: labels, public graph, marks), so a release on
	// other data can say so; absent in files written before it existed.
	Data    string    `json:"data,omitempty"`
	Created time.Time `json:"created"`
}

// Info is what Compile needs beyond the fit.
type Info struct {
	Score   string
	Dataset string
	Seed    *uint64 // the seed of a seeded run, nil otherwise
	// Grid is the number of table points. Trainers compile their table with
	// it (0 = transform.DefaultGrid); Compile checks it against len(Fit.F)
	// when it is set.
	Grid    int
	Created time.Time // zero = now
}

// Fit is what a trainer produces: the transform f already compiled to a
// monotone table and how it was obtained. Package train's results become a
// Fit in train/deploy (deploy.Compile); this package does not depend on the
// trainer.
type Fit struct {
	Variant Variant
	EpsP    float64 // eps_p the transform was trained for
	// F is the table of f at the grid points x = i/(len(F)-1), i = 0..len(F)-1
	// (as transform.Compile produces it: finite and non-decreasing).
	F []float64
	// H is the table of a public transform h. No model has one (dplp-pub
	// ranks by s_pub exactly): Compile refuses a non-nil H.
	H []float64
	// Config is the trainer's configuration as recorded (JSON), stored
	// verbatim in Metadata.Config. Empty is stored as null.
	Config         json.RawMessage
	Epochs         int     // epochs run
	BestEpoch      int     // the epoch kept
	HeldOutAUC     float64 // at BestEpoch; NaN when there was no held-out data
	EarlyStopped   bool
	TrainQueries   int
	SkippedQueries int
}

// Compile builds a model from a trainer's fit. The table is normalised so
// that f(0) = 0 and f(1) = 1: adding a constant to a utility or scaling it
// by a positive factor changes neither the mechanism's distribution (it
// samples from q/Delta_q) nor the exact top-K, so this only makes files
// comparable. fit.F is not modified.
func Compile(fit Fit, info Info) (*Model, error) {
	if fit.H != nil {
		return nil, fmt.Errorf("model: variant %s: a public transform h is not part of any model (dplp-pub ranks by s_pub exactly)", fit.Variant)
	}
	if eps := fit.EpsP; !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("model: eps_p = %v cannot be stored (want positive and finite)", eps)
	}
	if fit.F == nil {
		return nil, errors.New("model: no trained transform")
	}
	if info.Grid != 0 && info.Grid != len(fit.F) {
		return nil, fmt.Errorf("model: grid %d with %d f values", info.Grid, len(fit.F))
	}
	cfg := fit.Config
	if len(cfg) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, cfg); err != nil {
			return nil, fmt.Errorf("model: training configuration: %w", err)
		}
		cfg = b.Bytes()
	}
	fv := slices.Clone(fit.F)
	if n := len(fv); n > 0 {
		if R := fv[n-1] - fv[0]; R > 0 {
			f0 := fv[0]
			for i := range fv {
				fv[i] = (fv[i] - f0) / R
			}
		}
	}
	created := info.Created
	if created.IsZero() {
		created = time.Now()
	}
	if fit.Variant.ListLevel() {
		return nil, errors.New("model: a dplp-list model has no transform to compile (use CompileList)")
	}
	m := &Model{
		Score:   info.Score,
		Variant: fit.Variant,
		EpsP:    fit.EpsP,
		Grid:    len(fv),
		F:       fv,
		Unit:    privunit.Party.String(),
		Meta: Metadata{
			Config:         cfg,
			Epochs:         fit.Epochs,
			BestEpoch:      fit.BestEpoch,
			EarlyStopped:   fit.EarlyStopped,
			TrainQueries:   fit.TrainQueries,
			SkippedQueries: fit.SkippedQueries,
			Seed:           info.Seed,
			Dataset:        info.Dataset,
			Created:        created.UTC().Round(0),
		},
	}
	if a := fit.HeldOutAUC; !math.IsNaN(a) && !math.IsInf(a, 0) {
		m.Meta.HeldOutAUC = &a
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

// init validates the exported fields and builds the tables.
func (m *Model) init() error {
	v, err := ParseVariant(string(m.Variant))
	if err != nil {
		return err
	}
	if v != m.Variant {
		return fmt.Errorf("model: variant %q is not in canonical form (want %q)", m.Variant, v)
	}
	if m.Unit != "" {
		u, err := privunit.Parse(m.Unit)
		if err != nil || u.String() != m.Unit {
			return fmt.Errorf("model: unit %q (want party or pair)", m.Unit)
		}
	}
	if v.ListLevel() {
		return m.initList()
	}
	if m.List != nil {
		return fmt.Errorf("model: variant %s with a list-level mechanism", v)
	}
	if m.Unit == privunit.Pair.String() {
		return fmt.Errorf("model: variant %s is calibrated to the party unit (Delta_s(u) bounds a whole party's pairs): unit pair is only for dplp-list", v)
	}
	if !(m.EpsP > 0) || math.IsInf(m.EpsP, 0) {
		return fmt.Errorf("model: eps_p = %v", m.EpsP)
	}
	if m.Grid < 2 || len(m.F) != m.Grid {
		return fmt.Errorf("model: grid %d with %d f values", m.Grid, len(m.F))
	}
	if m.H != nil {
		if v.Lexicographic() {
			return ErrOldPublic
		}
		return fmt.Errorf("model: variant %s with a public table h", v)
	}
	if m.f, err = transform.NewTable(m.F); err != nil {
		return fmt.Errorf("model: f: %w", err)
	}
	m.lex = v.Lexicographic()
	return nil
}

// initList validates a dplp-list model.
func (m *Model) initList() error {
	l := m.List
	switch {
	case l == nil:
		return errors.New("model: dplp-list model without its list mechanism")
	case m.Unit == "":
		return errors.New("model: dplp-list model without a privacy unit")
	case m.EpsP != 0 || m.Grid != 0 || m.F != nil || m.H != nil:
		return errors.New("model: dplp-list model with a per-pick transform")
	case !(l.Eps > 0) || math.IsInf(l.Eps, 0):
		return fmt.Errorf("model: dplp-list eps per list %v (want positive and finite)", l.Eps)
	case l.FitK < 1:
		return fmt.Errorf("model: dplp-list fit_k %d (want >= 1)", l.FitK)
	}
	for _, x := range []float64{l.Rho, l.PubScale, l.EvScale} {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("model: dplp-list rho/scales %v, %v, %v (want finite >= 0)", l.Rho, l.PubScale, l.EvScale)
		}
	}
	if err := l.Combine.Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if l.Combine.Gauss {
		// The Gaussian release is rho-zCDP, not eps-DP, and the release path
		// charges pure eps per list: refuse it rather than charge the wrong
		// quantity (docs/privacy-model.md §16.9).
		return errors.New("model: a Gaussian dplp-list combination (combine.gauss) is for research runs only: deployments release Laplace lists, charged pure eps")
	}
	if _, err := score.ParseKind(l.Evidence); err != nil {
		return fmt.Errorf("model: dplp-list evidence score: %w", err)
	}
	if _, err := score.ParseKind(m.Score); err != nil {
		return fmt.Errorf("model: dplp-list needs a triad score (cn, aa, ra, jc, pa), got %q: %w", m.Score, err)
	}
	m.f, m.lex = nil, false
	return nil
}

// CompileList builds a dplp-list model for triad score scoreName under unit
// from its fitted mechanism spec; info.Grid must be 0. The model is
// validated as Load would.
func CompileList(scoreName string, unit privunit.Unit, spec ListSpec, info Info) (*Model, error) {
	if !unit.Valid() {
		return nil, fmt.Errorf("model: invalid unit %v", unit)
	}
	if info.Grid != 0 {
		return nil, errors.New("model: a dplp-list model has no table grid")
	}
	created := info.Created
	if created.IsZero() {
		created = time.Now()
	}
	sp := spec
	if spec.Fit != nil {
		f := *spec.Fit
		sp.Fit = &f
	}
	m := &Model{Score: scoreName, Variant: VariantList, Unit: unit.String(), List: &sp,
		Meta: Metadata{Seed: info.Seed, Dataset: info.Dataset, Created: created.UTC().Round(0)}}
	if sp.Fit != nil {
		m.Meta.TrainQueries = sp.Fit.Queries
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

// PrivacyUnit is the model's privacy unit: Pair for a pair-unit dplp-list
// model, Party otherwise (files without a unit are party-unit models).
func (m *Model) PrivacyUnit() privunit.Unit {
	if m.Unit == privunit.Pair.String() {
		return privunit.Pair
	}
	return privunit.Party
}

// ListLevel reports whether m is a dplp-list model (List set).
func (m *Model) ListLevel() bool { return m.Variant.ListLevel() }

// Public reports whether releases use the public score: the dplp-pub
// variant, released with the lexicographic mechanism (Lexicographic).
func (m *Model) Public() bool { return m.lex }

// Lexicographic implements calib.Lexicographic: dplp-pub models rank
// candidates by s_pub exactly and apply the exponential mechanism on f(s)
// only within groups of equal s_pub (docs/privacy-model.md §11).
func (m *Model) Lexicographic() bool { return m.lex }

// Tables returns the compiled table of f (h is always nil: no model has a
// public transform any more; kept for callers of the two-table form).
func (m *Model) Tables() (f, h *transform.Table) { return m.f, nil }

// Utility returns f(s/sMax); sPub is not part of the utility (dplp-pub
// ranks by it exactly, see Lexicographic). Arguments outside [0, sMax] are
// clamped; sMax <= 0 maps every score to x = 0. NaN propagates.
//
// A dplp-list model has no transform: Utility is 0 and Delta +Inf (a
// per-pick mechanism handed one by mistake releases a uniformly random
// list, which reads no private data). Release it with package release.
func (m *Model) Utility(s, sPub, sMax float64) float64 {
	if m.f == nil {
		return 0
	}
	return m.f.Eval(ratio(s, sMax))
}

// AppendUtilities appends Utility(s[i], ·, sMax) to dst for every i in idx,
// in order (calib.Plan.AppendUtilities uses it for a whole candidate list).
func (m *Model) AppendUtilities(dst, s []float64, idx []int, sMax float64) []float64 {
	if m.f == nil {
		for range idx {
			dst = append(dst, 0)
		}
		return dst
	}
	if sMax > 0 {
		return m.f.AppendRatios(dst, s, idx, sMax)
	}
	for _, i := range idx {
		dst = append(dst, m.f.Eval(ratio(s[i], sMax)))
	}
	return dst
}

// ScoreUtility is Utility(s, ·, sMax): the value AppendUtilities gives for
// s (the utility does not read s_pub).
func (m *Model) ScoreUtility(s, sMax float64) float64 { return m.Utility(s, 0, sMax) }

// UtilityBounds returns lo <= ScoreUtility(s, sMax) <= hi for every finite
// s in [sLo, sHi], rigorously for the floating-point evaluation
// (transform.Table.RatioBounds), so a sampler can evaluate only the
// candidates it proposes (calib.Plan.SampleScores).
func (m *Model) UtilityBounds(sLo, sHi, sMax float64) (lo, hi float64) {
	switch {
	case m.f == nil:
		return 0, 0
	case sMax > 0:
		return m.f.RatioBounds(sLo, sHi, sMax)
	}
	y := m.f.Eval(0) // every finite score maps to x = 0
	return y, y
}

func ratio(s, sMax float64) float64 {
	if !(sMax > 0) {
		if s != s {
			return s
		}
		return 0
	}
	return s / sMax
}

// Delta returns the exact sensitivity of the utility for a query with
// base-score sensitivity deltaS and bound sMax: the table Delta of f at
// deltaS/sMax.
// deltaS = 0 gives exactly 0 (release the exact top-K); sMax <= 0 with
// deltaS > 0 gives f(1) - f(0); a negative or NaN deltaS gives +Inf, which
// makes the mechanism uniform (fail-safe).
func (m *Model) Delta(deltaS, sMax float64) float64 {
	switch {
	case m.f == nil:
		return math.Inf(1)
	case deltaS == 0:
		return 0
	case !(deltaS > 0):
		return math.Inf(1)
	case !(sMax > 0):
		return m.f.Delta(1)
	}
	return m.f.Delta(deltaS / sMax)
}

// envelope is the file; content is what the checksum covers.
type envelope struct {
	FormatVersion int             `json:"format_version"`
	Model         json.RawMessage `json:"model"`
	SHA256        string          `json:"sha256"`
}

type content struct {
	FormatVersion int    `json:"format_version"`
	Model         *Model `json:"model"`
}

func checksum(m *Model) (string, []byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return "", nil, fmt.Errorf("model: encode: %w", err)
	}
	c, err := json.Marshal(content{FormatVersion: FormatVersion, Model: m})
	if err != nil {
		return "", nil, fmt.Errorf("model: encode: %w", err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), body, nil
}

// Save writes m to path atomically (internal/atomicfile: temporary file,
// fsync, rename). It refuses a path that exists and is not a regular file
// (a symbolic link, a device, a directory, a named pipe).
func Save(path string, m *Model) error {
	if m == nil {
		return errors.New("model: nil model")
	}
	if err := m.init(); err != nil {
		return err
	}
	sum, body, err := checksum(m)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(envelope{FormatVersion: FormatVersion, Model: body, SHA256: sum}, "", " ")
	if err != nil {
		return fmt.Errorf("model: encode: %w", err)
	}
	out = append(out, '\n')
	err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(out)
		return err
	})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// Load reads and verifies a model file. Errors wrap ErrVersion,
// ErrChecksum or ErrMalformed where they apply.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var head struct {
		FormatVersion *int `json:"format_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	if head.FormatVersion == nil {
		return nil, fmt.Errorf("%w: %s: no format_version", ErrMalformed, path)
	}
	if *head.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w: %s has version %d, this build reads %d", ErrVersion, path, *head.FormatVersion, FormatVersion)
	}
	var env envelope
	if err := strictDecode(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	if len(env.Model) == 0 || env.SHA256 == "" {
		return nil, fmt.Errorf("%w: %s: missing model or sha256", ErrMalformed, path)
	}
	m := new(Model)
	if err := strictDecode(env.Model, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	sum, _, err := checksum(m)
	if err != nil {
		return nil, err
	}
	if sum != env.SHA256 {
		return nil, fmt.Errorf("%w: %s", ErrChecksum, path)
	}
	if len(m.Meta.Config) > 0 {
		// As Compile stores it (the checksum covers the compact form).
		var b bytes.Buffer
		if err := json.Compact(&b, m.Meta.Config); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
		}
		m.Meta.Config = b.Bytes()
	}
	if err := m.init(); err != nil {
		if errors.Is(err, ErrOldPublic) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	return m, nil
}

// strictDecode rejects unknown fields (they would escape the checksum) and
// trailing data.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// ID identifies the model's content: "model:" and the first 16 hex digits
// of its checksum. Ledgers key re-served lists by it, so a retrained model
// (new tables) never re-serves another model's lists.
func (m *Model) ID() (string, error) {
	sum, _, err := checksum(m)
	if err != nil {
		return "", err
	}
	return "model:" + sum[:16], nil
}

// OtherDataNote is the notice every front end gives (dplp recommend and the
// Beam pipeline on stderr) when the model at path was trained on other data
// than it is released on: its Meta.Data differs from protect.Fingerprint
// of the data at hand. Allowed (marks change), but worth knowing.
func OtherDataNote(path string) string {
	return fmt.Sprintf("note: %s was trained on other data (its labels, public graph or marks differ from these); its transform still applies, but retrain it when the graph has changed much", path)
}
