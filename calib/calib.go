// Package calib ties base scores, an optional learned transform and a
// mechanism together for one query: it turns (s, s_pub) into utilities and
// picks the noise scale from the query's sensitivity, following
// privacy-model §3-§5 (the default "rigorous" calibration), or reproduces
// the authors' code (the "reference" calibration, reference-implementation
// §3.2-§3.3 and §7), which does NOT meet the stated guarantee.
package calib

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

// Method is a release mechanism.
type Method int

const (
	Exponential    Method = iota // exponential mechanism, Gumbel top-K, scale 2*Delta/eps
	Laplace                      // paper's baseline: Laplace(Delta/eps) once, top-K
	LaplacePeeling               // report-noisy-max peeling, fresh Laplace(2*Delta/eps) per pick
	Staircase                    // paper's baseline: staircase(eps, Delta) once, top-K
	NonPrivate                   // exact top-K of s (ties uniform)
	PublicOnly                   // exact top-K of s_pub (zero sensitivity, 0-DP)
)

var methodNames = map[Method]string{Exponential: "exponential", Laplace: "laplace", LaplacePeeling: "laplace-peeling",
	Staircase: "staircase", NonPrivate: "nonprivate", PublicOnly: "public-only"}

func (m Method) String() string { return methodNames[m] }

// ParseMethod parses a mechanism name.
func ParseMethod(s string) (Method, error) {
	for m, n := range methodNames {
		if strings.EqualFold(s, n) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mechanism %q (want exponential, laplace, laplace-peeling, staircase, nonprivate or public-only)", s)
}

// Calibration selects how the noise scale is derived.
type Calibration int

const (
	// Rigorous is the default: Delta is the scorer's invariant Delta_s(u)
	// (privacy-model §4) or Delta_f(u) of the compiled transform (§5).
	Rigorous Calibration = iota
	// Reference reproduces the authors' code: Delta from a(u), the number of
	// protected edges at u; scores normalised by Delta+1; noise only when
	// a(u) > 0; staircase with eps applied twice and gamma exponent 0.33.
	// It does not meet the stated guarantee.
	Reference
)

func (c Calibration) String() string {
	if c == Reference {
		return "reference"
	}
	return "rigorous"
}

// ParseCalibration parses "rigorous" or "reference".
func ParseCalibration(s string) (Calibration, error) {
	switch strings.ToLower(s) {
	case "rigorous":
		return Rigorous, nil
	case "reference":
		return Reference, nil
	}
	return 0, fmt.Errorf("unknown calibration %q (want rigorous or reference)", s)
}

// Warning is printed with every output of the reference calibration.
const Warning = "WARNING: reference calibration reproduces the authors' code and does NOT meet the stated protected-pair DP guarantee (see privacy-model §9)"

// Transform is a learned monotone utility on base scores (the compiled DPLP
// table, model.Model). Utility must be monotone non-decreasing in s; Delta
// must bound the change of Utility between neighbouring graphs given the
// base-score sensitivity deltaS (the public part may not contribute).
type Transform interface {
	Utility(s, sPub, sMax float64) float64
	Delta(deltaS, sMax float64) float64
}

// Query is what the calibration may know about a query: invariant data only
// in the rigorous mode.
type Query struct {
	DeltaS, SMax float64
	// DeltaPair is the per-candidate bound of the score's change under the
	// pair unit (score.Scorer.Evidence(u, privunit.Pair).Linf: one
	// protected pair moves any candidate's score by at most this; 1 for
	// CN). Read only when Config.Unit is privunit.Pair.
	DeltaPair float64
	RefA      int // reference only: protected edges at u present in the graph
	RefMaxDeg int // reference only: max degree of the graph
}

// Lexicographic is implemented by transforms released with the
// lexicographic mechanism (DPLP-pub, model variant dplp-pub): candidates
// ranked by s_pub exactly, the exponential mechanism on the transform of s
// only within groups of equal s_pub (privacy-model §11).
type Lexicographic interface {
	Lexicographic() bool
}

// Config fixes a release mechanism.
type Config struct {
	Method      Method
	Calibration Calibration
	Kind        score.Kind // base score (the reference calibration's Delta depends on it)
	Eps         float64    // eps_p, per pick
	Transform   Transform  // nil: utility is the base score itself
	// Lexicographic selects the lexicographic mechanism (Method must be
	// Exponential, rigorous calibration): rank by s_pub, and by the
	// exponential mechanism on the utility (the transform of s, or s itself
	// without a transform) within groups of equal s_pub. A transform that
	// implements Lexicographic and returns true selects it too.
	Lexicographic bool
	// ExactSampler samples the exponential mechanism with the exact base-2
	// sampler (mech/exact: integer arithmetic, no floating-point
	// probabilities; each pick is EpsPerPick <= Eps -DP, rounding
	// included) instead of floating-point Gumbel keys. Not available for
	// the lexicographic mechanism.
	ExactSampler bool
	// Unit is the privacy unit the noise is calibrated for (rigorous
	// calibration): Party (the zero value; Definition 1) uses
	// Query.DeltaS = Delta_s(u), a bound over all of one party's pairs;
	// Pair uses Query.DeltaPair, the bound for one protected pair. Either
	// way each pick is Eps-DP for that unit; a party-unit plan is also a
	// pair-unit one at the same cost, not the other way round (a party with
	// m pairs gets m x Eps per pick under a pair-unit plan, by group
	// privacy).
	Unit privunit.Unit
}

// Lex reports whether the configuration releases with the lexicographic
// mechanism.
func (c *Config) Lex() bool {
	if c.Lexicographic {
		return true
	}
	l, ok := c.Transform.(Lexicographic)
	return ok && l.Lexicographic()
}

// ReadsPublic reports whether plans of c read candidates' public scores
// s_pub: public-only ranks by them, the lexicographic mechanism (DPLP-pub)
// groups by them, and a transform may read them unless its utility is
// declared a function of the score alone (a ScoreUtility method, as
// model.Model has). When it is false a caller may leave the public scores
// out (score.Worker.ScoreNoPublic): Plan.AppendUtilities then accepts an
// empty pub, and no sampler of the plan reads it.
func (c *Config) ReadsPublic() bool {
	if c.Method == PublicOnly || c.Lex() {
		return true
	}
	if c.Transform == nil {
		return false // the utility is s / norm
	}
	_, scoreOnly := c.Transform.(interface{ ScoreUtility(s, sMax float64) float64 })
	return !scoreOnly
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if _, ok := methodNames[c.Method]; !ok {
		return fmt.Errorf("calib: invalid method %d", c.Method)
	}
	if c.Method != NonPrivate && c.Method != PublicOnly && (!(c.Eps > 0) || math.IsInf(c.Eps, 1)) {
		return fmt.Errorf("calib: eps must be a finite number > 0, got %v", c.Eps)
	}
	if c.Calibration == Reference && c.Transform != nil {
		return fmt.Errorf("calib: the reference calibration applies to untransformed scores only")
	}
	if c.Method == PublicOnly && c.Transform != nil {
		return fmt.Errorf("calib: public-only ranks s_pub itself, without a transform")
	}
	if c.ExactSampler && (c.Method != Exponential || c.Calibration != Rigorous) {
		return fmt.Errorf("calib: the exact sampler implements the rigorous exponential mechanism (plain or lexicographic) only")
	}
	if !c.Unit.Valid() {
		return fmt.Errorf("calib: invalid privacy unit %v", c.Unit)
	}
	if c.Unit == privunit.Pair && c.Calibration != Rigorous {
		return fmt.Errorf("calib: the pair unit is calibrated rigorously only (the reference calibration carries no guarantee)")
	}
	if c.Lex() && (c.Method != Exponential || c.Calibration != Rigorous) {
		return fmt.Errorf("calib: the lexicographic mechanism (DPLP-pub) is the exponential mechanism with the rigorous calibration, got %s/%s", c.Method, c.Calibration)
	}
	return nil
}

// refDelta is the authors' per-query "sensitivity" (reference §3.1).
func refDelta(k score.Kind, a, maxDeg int) float64 {
	switch k {
	case score.CN:
		return float64(a)
	case score.AA:
		return float64(a) / math.Ln2
	case score.RA:
		return float64(a) / 2
	case score.JC:
		return 1
	case score.PA:
		return float64(a) * float64(maxDeg)
	}
	return 1
}

// Plan is a calibrated mechanism for one query: how to map scores to
// utilities and which noise to add.
type Plan struct {
	cfg   *Config
	q     Query
	lex   bool    // lexicographic mechanism (rank by s_pub, exponential within groups)
	norm  float64 // reference: divide scores by this
	Delta float64 // utility sensitivity used for the noise
	Scale float64 // noise scale (0: exact top-K)
	Stair mech.StaircaseParams
}

// Plan calibrates the mechanism for query q.
func (c *Config) Plan(q Query) Plan {
	p := Plan{cfg: c, q: q, norm: 1, lex: c.Lex()}
	if c.Method == NonPrivate || c.Method == PublicOnly {
		return p
	}
	if c.Calibration == Reference {
		d := refDelta(c.Kind, q.RefA, q.RefMaxDeg)
		if d > 1.01 {
			p.norm = d + 1
		}
		if q.RefA == 0 {
			// No noise when u has no protected edge (reference §3.2; JC too,
			// because the authors' shared noise file is PA's).
			return p
		}
		p.Delta = 1
		switch c.Method {
		case Exponential:
			p.Scale = 2 / c.Eps
		case Laplace:
			p.Scale = 1 / c.Eps
		case LaplacePeeling:
			p.Scale = 2 / c.Eps
		case Staircase:
			// X ~ Staircase(eps, Delta=1, gamma_0.33) then divided by eps again.
			p.Stair = mech.StaircaseParams{Eps: c.Eps, Delta: 1 / c.Eps, Gamma: mech.ReferenceGamma(c.Eps)}
			p.Scale = 1
		}
		return p
	}
	ds := q.DeltaS
	if c.Unit == privunit.Pair {
		ds = q.DeltaPair
	}
	if c.Transform != nil {
		p.Delta = c.Transform.Delta(ds, q.SMax)
	} else {
		p.Delta = ds
	}
	if p.Delta == 0 {
		return p // invariant utilities: exact top-K is 0-DP
	}
	switch c.Method {
	case Exponential, LaplacePeeling:
		p.Scale = 2 * p.Delta / c.Eps
	case Laplace:
		p.Scale = p.Delta / c.Eps
	case Staircase:
		p.Stair = mech.StaircaseParams{Eps: c.Eps, Delta: p.Delta, Gamma: mech.OptimalGamma(c.Eps)}
		p.Scale = 1
	}
	return p
}

// Utility maps a candidate's base score and public score to its utility.
func (p *Plan) Utility(s, sPub float64) float64 {
	switch {
	case p.cfg.Method == PublicOnly:
		return sPub
	case p.cfg.Transform != nil:
		return p.cfg.Transform.Utility(s, sPub, p.q.SMax)
	}
	return s / p.norm
}

// AppendUtilities appends Utility(s[i], pub[i]) to dst for every i in idx,
// in order: the same values, in one call per candidate list (a Transform
// with an AppendUtilities method of its own evaluates them in one loop).
//
// pub may be empty when the configuration does not read public scores
// (Config.ReadsPublic false).
func (p *Plan) AppendUtilities(dst, s, pub []float64, idx []int) []float64 {
	type batch interface {
		AppendUtilities(dst, s []float64, idx []int, sMax float64) []float64
	}
	if b, ok := p.cfg.Transform.(batch); ok && p.cfg.Method != PublicOnly {
		return b.AppendUtilities(dst, s, idx, p.q.SMax)
	}
	if len(pub) == 0 && !p.cfg.ReadsPublic() {
		for _, i := range idx {
			dst = append(dst, p.Utility(s[i], 0)) // s_pub is not read
		}
		return dst
	}
	for _, i := range idx {
		dst = append(dst, p.Utility(s[i], pub[i]))
	}
	return dst
}

// ReadsPublic is the configuration's ReadsPublic.
func (p *Plan) ReadsPublic() bool { return p.cfg.ReadsPublic() }

// Exact reports whether the plan adds no noise.
func (p *Plan) Exact() bool { return p.Scale == 0 }

// Lexicographic reports whether the plan ranks by s_pub first (DPLP-pub);
// its lists must be sampled with SampleWithPub.
func (p *Plan) Lexicographic() bool { return p.lex }

// SampleWithPub releases an ordered list of up to k picks (indices into u)
// given pub[i], the public score s_pub of the candidate behind u.Vals[i];
// every block of u is a block of candidates with s = s_pub = 0 (the zero
// block). The lexicographic plan needs the public scores; every other plan
// ignores them and is Sample.
func (p *Plan) SampleWithPub(u *mech.Utilities, pub []float64, k int, r *rand.Rand, dst []int) ([]int, error) {
	if !p.lex {
		return p.Sample(u, k, r, dst)
	}
	if p.cfg.ExactSampler && !p.Exact() {
		return exactLexTopK(u, pub, k, p.cfg.Eps, p.Delta, r, dst)
	}
	return mech.LexTopK(u, pub, nil, k, p.Scale, r, dst)
}

// exactLexTopK is the lexicographic mechanism with the exact base-2
// sampler inside each group: groups of equal public key in decreasing
// order fill the list, and a group receiving t positions releases the
// exact sampler's top-t of its own utilities (blocks belong to the group of
// public key 0). Which positions come from which group depends only on the
// public keys and the group sizes (invariant), so the list costs eps_p per
// random pick exactly as the float mechanism (Plan.Picks); each pick inside
// a group is EpsPerPick <= eps_p -DP.
func exactLexTopK(u *mech.Utilities, pub []float64, k int, eps, delta float64, r *rand.Rand, dst []int) ([]int, error) {
	dst = dst[:0]
	if len(pub) != len(u.Vals) {
		return dst, fmt.Errorf("calib: %d public keys for %d utilities", len(pub), len(u.Vals))
	}
	s, err := exact.New(eps, delta, nil)
	if err != nil {
		return dst, err
	}
	n := len(u.Vals)
	blocks := 0
	for _, b := range u.Blocks {
		blocks += b.Size
	}
	keys := slices.Clone(pub)
	if blocks > 0 {
		keys = append(keys, 0)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	slices.Reverse(keys)
	remaining := min(k, n+blocks)
	var members []int
	var gu mech.Utilities
	for _, key := range keys {
		if remaining == 0 {
			break
		}
		members, gu.Vals, gu.Blocks = members[:0], gu.Vals[:0], gu.Blocks[:0]
		for i, pk := range pub {
			if pk == key {
				members = append(members, i)
				gu.Vals = append(gu.Vals, u.Vals[i])
			}
		}
		size := len(members)
		if key == 0 {
			gu.Blocks = append(gu.Blocks, u.Blocks...)
			size += blocks
		}
		t := min(remaining, size)
		picks, err := s.TopK(&gu, t, RandReader{r}, nil)
		if err != nil {
			return dst, err
		}
		for _, pi := range picks {
			if pi < len(members) {
				dst = append(dst, members[pi])
			} else {
				dst = append(dst, n+pi-len(members)) // block members keep their virtual index
			}
		}
		remaining -= t
	}
	return dst, nil
}

// Picks is the number of random picks of a list of min(k, u.Len())
// released from u by this plan (what the list is charged for): 0 for an
// exact plan (Delta = 0, public-only, non-private), for the lexicographic
// plan the positions not fixed by the public scores (mech.LexPicks: a
// function of pub and the block sizes only, so invariant), otherwise every
// position. pub and blocks are as in SampleWithPub; pub is only read by
// the lexicographic plan, and its order does not matter.
func (p *Plan) Picks(u *mech.Utilities, pub []float64, k int) (int, error) {
	if k < 1 {
		return 0, fmt.Errorf("calib: k must be >= 1, got %d", k)
	}
	if p.Exact() {
		return 0, nil
	}
	if p.lex {
		return mech.LexPicks(u, pub, nil, k)
	}
	return min(k, u.Len()), nil
}

// ListCost is the protected-pair eps claimed for a list with the given
// number of random picks (Picks): picks x eps_p, 0 for public-only and for
// an exact plan of an invariant utility, +Inf for the non-private top-K.
// For the one-shot Laplace and staircase baselines with picks > 1 it is
// the paper's claim, which is not proven (Config.Guarantee).
func (p *Plan) ListCost(picks int) float64 {
	switch p.cfg.Method {
	case NonPrivate:
		return math.Inf(1)
	case PublicOnly:
		return 0
	}
	return float64(picks) * p.cfg.Eps
}

// Sample releases an ordered list of up to k picks (indices into u). The
// lexicographic plan refuses (it needs the public scores: SampleWithPub).
func (p *Plan) Sample(u *mech.Utilities, k int, r *rand.Rand, dst []int) ([]int, error) {
	if p.lex {
		return dst[:0], fmt.Errorf("calib: the lexicographic (DPLP-pub) plan needs public scores: use SampleWithPub")
	}
	if p.Exact() {
		return mech.ExactTopK(u, k, r, dst)
	}
	switch p.cfg.Method {
	case Exponential:
		if p.cfg.ExactSampler {
			s, err := exact.New(p.cfg.Eps, p.Delta, nil)
			if err != nil {
				return dst[:0], err
			}
			return s.TopK(u, k, RandReader{r}, dst)
		}
		return mech.ExpTopK(u, k, p.Scale, r, dst)
	case Laplace:
		return mech.LaplaceTopK(u, k, p.Scale, r, dst)
	case LaplacePeeling:
		return mech.LaplacePeel(u, k, p.Scale, r, dst)
	case Staircase:
		return mech.StaircaseTopK(u, k, p.Stair, r, dst)
	}
	return mech.ExactTopK(u, k, r, dst)
}

// Keyed reports whether the plan's list can be drawn with per-candidate
// keyed noise (SampleKeyed): it samples with Gumbel top-K, the float
// exponential mechanism (mech.ExpTopK) or, for an exact plan, the top-K
// with random tie-breaking. The lexicographic plan, the exact base-2
// sampler and the research baselines (Laplace, peeling, staircase) draw
// sequentially and are not keyed.
func (p *Plan) Keyed() bool {
	if p.lex {
		return false
	}
	return p.Exact() || (p.cfg.Method == Exponential && !p.cfg.ExactSampler)
}

// SampleKeyed is Sample with candidate i's noise keyed by (key, ids[i])
// (mech.ExpTopKKeyed), for a plan whose Keyed is true: the list is then a
// function of the candidates as a set of (id, utility) pairs, the blocks,
// key and r, whatever their order. Seeded (research) releases use it.
func (p *Plan) SampleKeyed(u *mech.Utilities, ids []int32, key mech.NoiseKey, k int, r *rand.Rand, dst []int) ([]int, error) {
	if !p.Keyed() {
		return dst[:0], fmt.Errorf("calib: this plan (%v) does not sample with keyed noise", p.cfg.Method)
	}
	return mech.ExpTopKKeyed(u, ids, key, k, p.Scale, r, dst)
}

// scoreTransform is a transform whose utility reads the score alone and
// can be bounded over an interval of scores (model.Model): SampleScores
// evaluates only the candidates its sampler proposes.
type scoreTransform interface {
	ScoreUtility(s, sMax float64) float64
	UtilityBounds(sLo, sHi, sMax float64) (lo, hi float64)
}

// ScoreSource serves scores by index: Score(i) for i in [0, Len()), the
// same value every time it is asked (a scorer's table read in place:
// release.UserInput.HeldAt).
type ScoreSource interface {
	Len() int
	Score(i int) float64
}

// sourceVals serves the utilities of a ScoreSource's scores on demand
// (exact.Lazy).
type sourceVals struct {
	t    scoreTransform
	src  ScoreSource
	sMax float64
}

func (v *sourceVals) Len() int         { return v.src.Len() }
func (v *sourceVals) At(i int) float64 { return v.t.ScoreUtility(v.src.Score(i), v.sMax) }

// SampleScores is Sample for the candidates whose scores are s (utility
// Utility(s[i], ·): the transform does not read s_pub) followed by blocks,
// for a plan that releases with the exact sampler: picks index [s...,
// block members...] as Sample's do. It computes the scores' range in one
// pass and hands the exact sampler a rigorous bound of the utilities
// (exact.Sampler.TopKLazy), which evaluates only the candidates it
// proposes when they all lie within one bucket (most lists at small
// eps_p), and every utility otherwise. The distribution of the list is
// Sample's. ok is false, and nothing is drawn, when the plan is not one
// this applies to (not the exponential mechanism with the exact sampler,
// an exact or lexicographic plan, a transform without bounds) or a score is
// NaN; the caller then samples with Sample. When ok, every pick is random:
// the list's Picks is its length.
//
// Block members are anonymous (exact.Sampler.TopKLazyAnon): the t-th pick
// from a block is reported as the block's first index plus t. The caller
// must map each block's picks to a uniformly random injection into its
// members (release's mapPicks does); the list then has Sample's
// distribution.
func (p *Plan) SampleScores(s []float64, blocks []mech.Block, k int, r *rand.Rand, dst []int) (picks []int, ok bool, err error) {
	if !p.scoresApply() || len(s) == 0 {
		return dst[:0], false, nil
	}
	lo, hi, ok := ScoreRange(s)
	if !ok {
		return dst[:0], false, nil // a NaN
	}
	return p.SampleScoresIn(s, lo, hi, blocks, k, r, dst)
}

// ScoreRange is the range of s, and whether it is one: false for an empty
// s or one holding a NaN or an infinity. Plain comparisons: the min and max
// builtins' NaN and signed-zero rules cost several times this loop.
func ScoreRange(s []float64) (lo, hi float64, ok bool) {
	if len(s) == 0 {
		return 0, 0, false
	}
	lo, hi = s[0], s[0]
	for _, x := range s {
		if x < lo {
			lo = x
		} else if x > hi {
			hi = x
		} else if x != x {
			return 0, 0, false
		}
	}
	return lo, hi, !math.IsInf(lo, 0) && !math.IsInf(hi, 0)
}

// SampleScoresIn is SampleScores for scores whose range is known: lo <= s[i]
// <= hi for every i, all finite (score.Result's SLo and SHi), so no pass
// over them is needed. A score outside the range can make the sampler
// return an error; it never changes the distribution.
func (p *Plan) SampleScoresIn(s []float64, lo, hi float64, blocks []mech.Block, k int, r *rand.Rand, dst []int) (picks []int, ok bool, err error) {
	src := sliceScores(s)
	return p.SampleScoresFrom(&src, lo, hi, blocks, k, r, dst)
}

// sliceScores serves a slice's scores (ScoreSource).
type sliceScores []float64

func (s *sliceScores) Len() int            { return len(*s) }
func (s *sliceScores) Score(i int) float64 { return (*s)[i] }

// SampleScoresFrom is SampleScoresIn for the scores src serves: lo <=
// src.Score(i) <= hi for every i, all finite, where lo need only be a
// lower bound (it decides whether the proposals can skip the utilities of
// candidates not proposed; the list's distribution is the same for any
// valid bounds, docs/SAMPLING.md) and hi should be the largest score (the
// acceptance of a proposal is measured from it). The picks index [src's
// scores..., block members...] as SampleScoresIn's index [s...,
// members...], with the same anonymous block picks; with the same bounds
// and generator they are SampleScoresIn's picks for the slice of src's
// scores.
func (p *Plan) SampleScoresFrom(src ScoreSource, lo, hi float64, blocks []mech.Block, k int, r *rand.Rand, dst []int) (picks []int, ok bool, err error) {
	if !p.scoresApply() || src.Len() == 0 || !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return dst[:0], false, nil
	}
	ex, err := exact.New(p.cfg.Eps, p.Delta, nil)
	if err != nil {
		return dst[:0], true, err
	}
	t := p.cfg.Transform.(scoreTransform)
	uLo, uHi := t.UtilityBounds(lo, hi, p.q.SMax)
	picks, err = ex.TopKLazyAnon(&sourceVals{t: t, src: src, sMax: p.q.SMax}, uLo, uHi, blocks, k, RandReader{r}, dst)
	return picks, true, err
}

// ScoresApply reports whether SampleScores, SampleScoresIn and
// SampleScoresFrom apply to p (they return ok = false otherwise): the
// exponential mechanism with the exact sampler, noise, no lexicographic
// order, and a transform that reads the score alone and bounds it.
func (p *Plan) ScoresApply() bool { return p.scoresApply() }

// SampleScoresKeyed is SampleKeyed for the candidates whose scores are s
// (lo <= s[i] <= hi, all finite; ids[i] their ids) followed by blocks, for
// a keyed plan with noise whose transform reads the score alone and bounds
// it (as SampleScores): it evaluates a candidate's utility only when its
// keyed draw could still enter the list (mech.ExpTopKKeyedLazy), so most
// candidates cost one hash and no transform. The list is SampleKeyed's on
// the utilities Utility(s[i], ·) with the same key and generator, block
// members included. ok is false, and nothing is drawn, when the plan is
// not one this applies to; the caller then computes the utilities and
// calls SampleKeyed.
func (p *Plan) SampleScoresKeyed(s []float64, lo, hi float64, ids []int32, blocks []mech.Block, key mech.NoiseKey, k int, r *rand.Rand, dst []int) (picks []int, ok bool, err error) {
	t, isScore := p.cfg.Transform.(scoreTransform)
	if !isScore || !p.Keyed() || p.Exact() || !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return dst[:0], false, nil
	}
	uLo, uHi := t.UtilityBounds(lo, hi, p.q.SMax)
	src := sliceScores(s)
	picks, err = mech.ExpTopKKeyedLazy(&sourceVals{t: t, src: &src, sMax: p.q.SMax}, uLo, uHi, blocks, ids, key, k, p.Scale, r, dst)
	return picks, true, err
}

// SampleWalk is the keyed plan's list for the candidates among the ids
// [0, n): v is a candidate when zero(v) (the zero block: score 0, utility
// Utility(0, 0)) or cand(v) (score s, utility Utility(s, ·)); nc and nz
// are their numbers, and the cand scores lie in [lo, hi] when hasRange
// (none when nc = 0). It walks the ids in a uniformly random order with
// the Gumbel draws in decreasing order (mech.WalkTopK), so the list is a
// function of the candidates by id, r and k, whatever order they could be
// listed in, and costs about k n/(nc+nz) e^((uHi-uLo)/scale) lookups.
// ok is false, and nothing is drawn, when the plan is not one this
// applies to (as SampleScoresKeyed) or the walk would visit more than
// about nc/8 ids (mech.WalkSteps): the caller then visits every candidate
// (SampleScoresKeyed or SampleKeyed). When ok every pick is random and the
// ids are the list.
func (p *Plan) SampleWalk(n int, cand func(v int32) (float64, bool), zero func(v int32) bool, lo, hi float64, hasRange bool, nc, nz, k int, r *rand.Rand, dst []int32) (ids []int32, ok bool, err error) {
	t, isScore := p.cfg.Transform.(scoreTransform)
	if !isScore || !p.Keyed() || p.Exact() || (nc > 0 && !hasRange) {
		return dst[:0], false, nil
	}
	zv := p.Utility(0, 0)
	uLo, uHi := zv, zv
	if nc > 0 {
		if !(lo <= hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			return dst[:0], false, nil
		}
		a, b := t.UtilityBounds(lo, hi, p.q.SMax)
		if nz > 0 {
			a, b = min(a, zv), max(b, zv)
		}
		uLo, uHi = a, b
	}
	if steps := mech.WalkSteps(n, nc+nz, k, uLo, uHi, p.Scale); !(steps*8 <= float64(nc)+256) {
		return dst[:0], false, nil
	}
	ids, err = mech.WalkTopK(n, walkCands{t: t, sMax: p.q.SMax, zero: zero, cand: cand, zv: zv}, uHi, k, p.Scale, r, dst)
	return ids, true, err
}

// walkCands classifies ids for SampleWalk: the zero block first (most ids
// of a large graph), then the scored candidates.
type walkCands struct {
	t    scoreTransform
	sMax float64
	zero func(v int32) bool
	cand func(v int32) (float64, bool)
	zv   float64
}

func (c walkCands) At(v int32) (float64, bool) {
	if c.zero(v) {
		return c.zv, true
	}
	if s, ok := c.cand(v); ok {
		return c.t.ScoreUtility(s, c.sMax), true
	}
	return 0, false
}

// scoresApply reports whether SampleScores applies to p: the exponential
// mechanism with the exact sampler, noise, no lexicographic order, and a
// transform of the score alone with bounds.
func (p *Plan) scoresApply() bool {
	_, isScore := p.cfg.Transform.(scoreTransform)
	return isScore && !p.lex && !p.Exact() && p.cfg.Method == Exponential && p.cfg.ExactSampler
}

// RandReader makes a *rand.Rand an io.Reader for the exact sampler: the
// bytes of successive Uint64 draws. Deployment generators are ChaCha8 keyed
// by crypto/rand (randx.Crypto), so the stream is cryptographically strong;
// seeded runs stay reproducible.
type RandReader struct{ R *rand.Rand }

// Uint64 is the generator's next word: the exact sampler draws words
// directly from a reader that has it (exact.Words), without the bytes.
func (rr RandReader) Uint64() uint64 { return rr.R.Uint64() }

// Read fills b from the generator; it never fails.
func (rr RandReader) Read(b []byte) (int, error) {
	n := len(b)
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, rr.R.Uint64())
		b = b[8:]
	}
	if len(b) > 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rr.R.Uint64())
		copy(b, w[:])
	}
	return n, nil
}

// Noise is the additive noise of a one-shot plan (Laplace, staircase), for
// exact K = 1 selection probabilities.
func (p *Plan) Noise() mech.Noise {
	if p.cfg.Method == Staircase {
		return p.Stair
	}
	return mech.Laplace{Scale: p.Scale}
}

// Guarantee is the protected-pair DP bound claimed for one released list of
// length k under this configuration, and whether it is proven. Exponential
// and peeling: k*eps (k rounds of an eps-DP selection). One-shot Laplace and
// staircase at the paper's calibration: 2*eps for k = 1 (report-noisy-max
// with noise calibrated to Delta rather than 2*Delta), nothing proven for
// k > 1. Public-only: 0. Non-private: +Inf. The reference calibration claims
// the same numbers as the paper but does not achieve them.
func (c *Config) Guarantee(k int) (eps float64, proven bool) {
	switch c.Method {
	case PublicOnly:
		return 0, true
	case NonPrivate:
		return math.Inf(1), false
	case Exponential, LaplacePeeling:
		// The lexicographic mechanism's lists cost at most this (Plan.Picks
		// gives each list's exact, smaller-or-equal cost).
		return float64(k) * c.Eps, c.Calibration == Rigorous
	}
	if k == 1 {
		return 2 * c.Eps, c.Calibration == Rigorous
	}
	return float64(k) * c.Eps, false
}
