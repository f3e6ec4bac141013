package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"

	"github.com/dplp/dplp/accountant"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// UserOut is one user's sampled list (ids in rank order).
type UserOut struct {
	U           int32
	Label       string
	IDs         []int32
	Picks       int32
	Influencers []int32 // ascending; only when the list costs something (CN/AA/RA; a dplp-list model's evidence cn)
	AllInfl     bool    // every party influences (JC; a dplp-list model's evidence jc)
	// ListLevel: a dplp-list list, charged ListCost (the model's eps per
	// list, or 0 when it reads no evidence) instead of Picks x eps_p.
	ListLevel bool
	ListCost  float64
	// PartyCost is a list-level outcome's party-unit cost (release's
	// listRel.partyCost: ListCost for party-unit models and free lists,
	// ListCost x L1_party(u)/L1_pair(u) for pair-unit ones); +Inf when the
	// pipeline does not know the party bound (evidence jc under the pair
	// unit).
	PartyCost float64
}

// loadModel parses a model file's bytes with model.Load (through a
// temporary file, so the checksum and invariants are checked exactly as on
// the single-machine path).
func loadModel(data []byte) (*model.Model, error) {
	f, err := os.CreateTemp("", "dplp-beam-model-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return model.Load(f.Name())
}

// sensitivity is score.Scorer.Sensitivity from b(u), c(u) and deg(u).
func sensitivity(kind score.Kind, b, c, deg int) (deltaS, sMax float64) {
	d := float64(deg)
	switch kind {
	case score.CN:
		return float64(max(b, c)), d
	case score.AA:
		return float64(b+c) / math.Ln2, d / math.Ln2
	case score.RA:
		return float64(b+c) / 2, d / 2
	default: // JC
		return 1, 1
	}
}

// releaseFn assembles each user's release.UserInput and samples it with
// release.Sampler, with the calib plan release.Recommender builds and the
// generator and sampler its SamplerAuto picks:
//
//   - Seeded (research): release.UserRNG(Seed, label, 0), a list that
//     does not depend on the candidates' order (UserInput.Canonical, with
//     the lookup by id UserInput.Cand), the float Gumbel sampler, exactly
//     release.New(..., release.WithSeed(Seed)): the lists are a
//     deterministic function of the graph and the seed, byte-identical to
//     the single-machine path, and carry NO privacy guarantee.
//   - Private (Seeded false): a ChaCha8 generator keyed from crypto/rand
//     on the worker (randx.Crypto, one per DoFn instance, never derived
//     from anything in the pipeline graph) and the exact base-2 sampler
//     (calib.Config.ExactSampler), as a crypto-seeded release.Recommender.
//     A retried bundle draws different lists; only the one that reaches the
//     charges file is ever charged and written (see finalFn and charges.go).
type releaseFn struct {
	Kind   int
	K      int
	Seeded bool
	Seed   uint64 // used only when Seeded
	Model  []byte // the model file's bytes (the compiled model as a side input)

	m      *model.Model
	cfg    calib.Config
	sm     release.Sampler
	crypto *rand.Rand
}

// config is the calibration of the release: release.New's, with the exact
// sampler for private (crypto-seeded) runs as release's SamplerAuto.
func releaseConfig(kind score.Kind, m *model.Model, seeded bool) calib.Config {
	return calib.Config{Method: calib.Exponential, Kind: kind, Eps: m.EpsP, Transform: m, ExactSampler: !seeded}
}

func (f *releaseFn) Setup() error {
	m, err := loadModel(f.Model)
	if err != nil {
		return err
	}
	f.m = m
	f.cfg = releaseConfig(score.Kind(f.Kind), m, f.Seeded)
	if !f.Seeded {
		f.crypto = randx.Crypto()
	}
	return f.cfg.Validate()
}

// rng is user label's generator.
func (f *releaseFn) rng(label string) *rand.Rand {
	if f.Seeded {
		return release.UserRNG(f.Seed, label, 0)
	}
	if f.crypto == nil { // Setup not run (direct calls)
		f.crypto = randx.Crypto()
	}
	return f.crypto
}

func (f *releaseFn) ProcessElement(u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, n int, emit func(UserOut)) error {
	nd, in, si, err := assemble(score.Kind(f.Kind), u, nodes, cands, sens, n, nil)
	if err != nil {
		return err
	}
	kind := score.Kind(f.Kind)
	in.Canonical = f.Seeded // seeded: independent of the candidates' order, as release.Recommender with WithSeed
	plan := f.cfg.Plan(calib.Query{DeltaS: in.DeltaS, SMax: in.SMax})
	if math.IsNaN(plan.Scale) || math.IsInf(plan.Scale, 0) || plan.Scale < 0 {
		return fmt.Errorf("release: user %s: noise scale %v is not a finite number >= 0", nd.Label, plan.Scale)
	}
	out, err := f.sm.Sample(&plan, in, f.K, f.rng(nd.Label))
	if err != nil {
		return err
	}
	uo := UserOut{U: u, Label: nd.Label, IDs: slices.Clone(out.IDs), Picks: int32(out.Picks)}
	if uo.IDs == nil {
		uo.IDs = []int32{}
	}
	if out.Picks > 0 {
		if kind == score.JC {
			uo.AllInfl = true
		} else {
			uo.Influencers = si.Infl
		}
	}
	emit(uo)
	return nil
}

// assemble builds user u's release.UserInput from the joined records. When
// ev is not nil, (*ev)[i] is set to the CN counts {EC, ECP} of in.Cands[i].
func assemble(kind score.Kind, u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, n int, ev *[][2]int32) (Node, *release.UserInput, SensInfo, error) {
	var nd Node
	var si SensInfo
	if !nodes(&nd) {
		return nd, nil, si, fmt.Errorf("candidates for unknown node %d (internal error)", u)
	}
	sens(&si)
	nbrs := nd.Nbrs
	var c Cand
	in := &release.UserInput{N: n}
	for cands(&c) {
		if c.V == u || has(nbrs, c.V) {
			continue // not a candidate (score.Worker skips u and N(u))
		}
		in.Cands = append(in.Cands, c.V)
		in.S = append(in.S, c.S)
		in.Pub = append(in.Pub, c.Pub)
		if ev != nil {
			*ev = append(*ev, [2]int32{c.EC, c.ECP})
		}
	}
	in.Zero = n - 1 - len(nbrs) - len(in.Cands)
	if in.Zero < 0 {
		return nd, nil, si, fmt.Errorf("user %s: negative zero block (internal error)", nd.Label)
	}
	// The candidates in id order (byID: their positions in in.Cands), for
	// the zero block's membership test and the lookup by id (Cand).
	byID := make([]int, len(in.Cands))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(a, b int) int { return cmp.Compare(in.Cands[a], in.Cands[b]) })
	sorted := make([]int32, len(byID))
	for j, i := range byID {
		sorted[j] = in.Cands[i]
	}
	in.InZero = func(v int32) bool {
		return v >= 0 && int(v) < n && v != u && !has(nbrs, v) && !has(sorted, v)
	}
	in.Cand = func(v int32) (float64, bool) {
		j, ok := slices.BinarySearch(sorted, v)
		if !ok {
			return 0, false
		}
		return in.S[byID[j]], true
	}
	in.ZeroList = func(dst []int32) []int32 {
		dst = dst[:0]
		for v := int32(0); int(v) < n; v++ {
			if in.InZero(v) {
				dst = append(dst, v)
			}
		}
		return dst
	}
	b := 0
	if si.C >= 1 {
		b = 1
	}
	in.DeltaS, in.SMax = sensitivity(kind, b, int(si.C), len(nbrs))
	return nd, in, si, nil
}

// Release joins each node's record with its candidates and sensitivity and
// samples its list.
// seed nil: private lists (crypto noise on the workers, exact sampler);
// else seeded research lists (release.UserRNG(*seed, label, 0)).
func Release(s beam.Scope, kind score.Kind, k int, seed *uint64, modelBytes []byte, nodes, cands, sens, n beam.PCollection) beam.PCollection {
	s = s.Scope("Release")
	j := beam.CoGroupByKey(s, beam.ParDo(s, keyNode, nodes), cands, sens)
	f := &releaseFn{Kind: int(kind), K: k, Model: modelBytes}
	if seed != nil {
		f.Seeded, f.Seed = true, *seed
	}
	return beam.ParDo(s, f, j, beam.SideInput{Input: n})
}

// Labelling the released ids: every pick (and influencer) is sent to the
// node it names, joined with the (id, label) table and sent back.

// Ref asks for the label of a node on behalf of user U: Rank >= 0 is a
// pick's rank, -1 an influencer.
type Ref struct {
	U    int32
	Rank int32
}

// Labeled is a resolved Ref.
type Labeled struct {
	Rank  int32
	ID    int32
	Label string
}

func refsFn(o UserOut, emit func(int32, Ref)) {
	for i, v := range o.IDs {
		emit(v, Ref{U: o.U, Rank: int32(i)})
	}
	for _, w := range o.Influencers {
		emit(w, Ref{U: o.U, Rank: -1})
	}
}

func labelRefsFn(id int32, labels func(*string) bool, refs func(*Ref) bool, emit func(int32, Labeled)) error {
	var label string
	if !labels(&label) {
		return fmt.Errorf("no label for node id %d (internal error)", id)
	}
	var r Ref
	for refs(&r) {
		emit(r.U, Labeled{Rank: r.Rank, ID: id, Label: label})
	}
	return nil
}

func keyUserOut(o UserOut) (int32, UserOut) { return o.U, o }

// Final is one user's output line and charge record (JSON, no newline).
// Key is the user's label: files are written in byte order of Key (the
// recommend command's --all order), then U.
type Final struct {
	U            int32
	Key          string
	Line, Charge string
}

// finalFn renders a user's JSONL line (the recommend command's format) and
// charge record, both marked with the run's provenance (Seeded). For a
// dplp-list model (Unit set) the line is recommend's dplp-list line (eps_p
// 0, "unit", "eps_list") and the charge is accountant.PureList of the
// list's cost, recorded with the unit and EpsList as its eps_p, as
// release.Recommender records it.
type finalFn struct {
	K       int
	EpsP    float64
	ModelID string
	RunID   string
	Seeded  bool
	Unit    string  // dplp-list models: "party" or "pair"; "" for per-pick models
	EpsList float64 // dplp-list models: eps per list
}

func (f *finalFn) ProcessElement(u int32, outs func(*UserOut) bool, labs func(*Labeled) bool, emit func(Final)) error {
	var o UserOut
	if !outs(&o) {
		return fmt.Errorf("labels for unknown user %d (internal error)", u)
	}
	list := make([]string, len(o.IDs))
	var infl []Labeled
	var l Labeled
	got := 0
	for labs(&l) {
		if l.Rank < 0 {
			infl = append(infl, l)
			continue
		}
		if int(l.Rank) >= len(o.IDs) || o.IDs[l.Rank] != l.ID {
			// A label for another list: the release stage ran twice and the
			// two branches saw different (crypto-seeded) draws. Fail rather
			// than write a list that was not sampled.
			return fmt.Errorf("user %s: label of rank %d is for node %d, the list has %v (recomputed release; internal error)", o.Label, l.Rank, l.ID, o.IDs)
		}
		list[l.Rank] = l.Label
		got++
	}
	if got != len(o.IDs) {
		return fmt.Errorf("user %s: %d of %d labels (internal error)", o.Label, got, len(o.IDs))
	}
	sort.Slice(infl, func(i, j int) bool { return infl[i].ID < infl[j].ID })
	var ch Charge
	var line string
	var err error
	if o.ListLevel {
		if f.Unit == "" {
			return fmt.Errorf("user %s: a list-level outcome in a per-pick run (internal error)", o.Label)
		}
		charge := accountant.PureList(o.ListCost) // one charge per list, whatever K
		line, err = RenderListLine(o.Label, list, f.K, charge.Eps, f.Seeded, f.Unit, f.EpsList)
		ch = Charge{IdemKey: IdemKey(f.RunID, o.Label), User: o.Label, Model: f.ModelID, K: f.K, EpsP: f.EpsList, List: list,
			Cost: charge.Eps, Rho: charge.Rho, Seeded: f.Seeded, Unit: f.Unit}
		if pc := o.PartyCost; !math.IsInf(pc, 0) && !math.IsNaN(pc) {
			ch.PartyCost = &pc
		}
	} else {
		charge := accountant.PerPick(f.EpsP, int(o.Picks)) // the privacy map, as release.Recommender charges
		line, err = RenderLine(o.Label, list, f.K, f.EpsP, charge.Eps, f.Seeded)
		ch = Charge{IdemKey: IdemKey(f.RunID, o.Label), User: o.Label, Model: f.ModelID, K: f.K, EpsP: f.EpsP, List: list,
			Cost: charge.Eps, Rho: charge.Rho, Seeded: f.Seeded}
	}
	if err != nil {
		return err
	}
	if o.AllInfl {
		ch.Influencers = []string{release.Everyone}
	}
	for _, x := range infl {
		ch.Influencers = append(ch.Influencers, x.Label)
	}
	cb, err := marshal(ch)
	if err != nil {
		return err
	}
	emit(Final{U: u, Key: o.Label, Line: line, Charge: cb})
	return nil
}

// Finals labels every user's list and renders the output records.
func Finals(s beam.Scope, f *finalFn, outs, idLabels beam.PCollection) beam.PCollection {
	s = s.Scope("Label")
	labeled := beam.ParDo(s, labelRefsFn, beam.CoGroupByKey(s, idLabels, beam.ParDo(s, refsFn, outs)))
	return beam.ParDo(s, f, beam.CoGroupByKey(s, beam.ParDo(s, keyUserOut, outs), labeled))
}
