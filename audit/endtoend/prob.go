package endtoend

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/release"
)

// Samplers the audit computes list probabilities for (Config.Sampler).
const (
	// SamplerAuto audits the sampler deployment uses: the exact sampler
	// (release.SamplerAuto for a crypto-seeded Recommender), the float one
	// for the reference calibration (which has no exact sampler).
	SamplerAuto = ""
	// SamplerExact is the exact base-2 exponential mechanism (mech/exact),
	// plain or lexicographic: list probabilities are the exact sampler's
	// (exact rationals, exact.Sampler.ListLogProbs).
	SamplerExact = release.SamplerExact
	// SamplerFloat is Gumbel top-K with float keys: the exponential
	// mechanism's probabilities (mech.ExpListLogProb, mech.LexListLogProb).
	SamplerFloat = release.SamplerFloat
)

// resolveSampler is the sampler the audited releases use.
func resolveSampler(cfg *Config) (string, error) {
	switch cfg.Sampler {
	case SamplerAuto, "auto":
		if cfg.Calibration == calib.Reference {
			return SamplerFloat, nil
		}
		return SamplerExact, nil
	case SamplerExact:
		if cfg.Calibration == calib.Reference {
			return "", fmt.Errorf("endtoend: the exact sampler implements the rigorous calibration only")
		}
		return SamplerExact, nil
	case SamplerFloat:
		return SamplerFloat, nil
	}
	return "", fmt.Errorf("endtoend: unknown sampler %q (want exact or float)", cfg.Sampler)
}

// allLists enumerates every ordered list of k distinct indices in [0, n).
func allLists(n, k int) [][]int {
	var out [][]int
	list := make([]int, 0, k)
	used := make([]bool, n)
	var rec func()
	rec = func() {
		if len(list) == k {
			out = append(out, append([]int(nil), list...))
			return
		}
		for i := 0; i < n; i++ {
			if !used[i] {
				used[i] = true
				list = append(list, i)
				rec()
				list = list[:len(list)-1]
				used[i] = false
			}
		}
	}
	rec()
	return out
}

// listLogProbs is ln P(list) for every list under the release of view v
// (indices into v.IDs) with the given sampler at per-pick eps: the exact
// sampler's exact probabilities when it samples (noise, Delta > 0), the
// float mechanism's otherwise (also the exact top-K of a plan without
// noise, which both samplers release identically).
func listLogProbs(sampler string, eps float64, v *release.UserView, lists [][]int) ([]float64, error) {
	out := make([]float64, len(lists))
	if sampler == SamplerExact && !v.Plan.Exact() {
		s, err := exact.New(eps, v.Plan.Delta, nil)
		if err != nil {
			return nil, err
		}
		if v.Plan.Lexicographic() {
			return exactLexLogProbs(s, v.Pub, v.Utilities, lists)
		}
		return s.ListLogProbs(v.Utilities, lists)
	}
	for i, l := range lists {
		var err error
		if v.Plan.Lexicographic() {
			out[i], err = mech.LexListLogProb(v.Pub, v.Utilities, v.Plan.Scale, l)
		} else {
			out[i], err = mech.ExpListLogProb(v.Utilities, v.Plan.Scale, l)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exactLexLogProbs is ln P(list) under the lexicographic mechanism with the
// exact sampler (calib's exactLexTopK): groups of equal public score fill
// the list in decreasing order of the score, and a group receiving t
// positions releases the exact sampler's top-t of its own utilities. So a
// list is possible only if it takes the groups in that order, each group
// whole before the next (the last one possibly in part), and its
// probability is the product over the groups of the exact sampler's
// probability of the group's segment among the group's utilities.
func exactLexLogProbs(s *exact.Sampler, pub, vals []float64, lists [][]int) ([]float64, error) {
	if len(pub) != len(vals) {
		return nil, fmt.Errorf("endtoend: %d public scores for %d utilities", len(pub), len(vals))
	}
	// The groups, in decreasing order of public score.
	type group struct {
		members []int       // indices into vals, ascending
		local   map[int]int // index -> position in members
		segs    [][]int     // distinct segments asked for (local indices)
		segIdx  map[string]int
		logp    []float64 // of segs
	}
	var keys []float64
	byKey := map[float64]*group{}
	for i, p := range pub {
		gr := byKey[p]
		if gr == nil {
			gr = &group{local: map[int]int{}, segIdx: map[string]int{}}
			byKey[p] = gr
			keys = append(keys, p)
		}
		gr.local[i] = len(gr.members)
		gr.members = append(gr.members, i)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	// Pass 1: split every list into its groups' segments.
	type piece struct {
		g   *group
		seg int
	}
	pieces := make([][]piece, len(lists))
	possible := make([]bool, len(lists))
	for li, l := range lists {
		i, ok := 0, true
		for _, key := range keys {
			if i == len(l) {
				break
			}
			gr := byKey[key]
			t := min(len(l)-i, len(gr.members))
			seg := make([]int, 0, t)
			var sk strings.Builder
			for _, c := range l[i : i+t] {
				lc, in := gr.local[c]
				if !in {
					ok = false // a later group before this one is exhausted
					break
				}
				seg = append(seg, lc)
				sk.WriteString(strconv.Itoa(lc))
				sk.WriteByte(',')
			}
			if !ok {
				break
			}
			si, seen := gr.segIdx[sk.String()]
			if !seen {
				si = len(gr.segs)
				gr.segIdx[sk.String()] = si
				gr.segs = append(gr.segs, seg)
			}
			pieces[li] = append(pieces[li], piece{gr, si})
			i += t
		}
		possible[li] = ok && i == len(l)
	}
	// Pass 2: the exact probabilities of every group's segments, one call
	// per group (its weights computed once).
	for _, key := range keys {
		gr := byKey[key]
		if len(gr.segs) == 0 {
			continue
		}
		gvals := make([]float64, len(gr.members))
		for j, i := range gr.members {
			gvals[j] = vals[i]
		}
		var err error
		if gr.logp, err = s.ListLogProbs(gvals, gr.segs); err != nil {
			return nil, err
		}
	}
	out := make([]float64, len(lists))
	for li := range lists {
		if !possible[li] {
			out[li] = math.Inf(-1)
			continue
		}
		for _, pc := range pieces[li] {
			out[li] += pc.g.logp[pc.seg]
		}
	}
	return out, nil
}
