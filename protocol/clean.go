package protocol

import (
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
)

// Per-query random streams: each query's draws come from a generator seeded
// by (seed of the query, phase), so phases and queries are independent of
// scheduling and of each other.
const (
	streamTestPos = 1 + iota
	streamTestNeg
	streamDev
)

// buildClean implements the Clean and Deployment protocols:
//
//  1. queries: the top int(QueryFrac·N) nodes by triangle count (ties by id)
//     that can hold out at least one positive and one negative,
//     int(TestFrac·deg) ≥ 1 and int(TestFrac·|nonN|) ≥ 1 (both kinds use the
//     same rule, so they share the query set);
//  2. test positives: int(TestFrac·deg) uniform neighbours per query, removed
//     from the graph in both directions (once if two queries pick the same
//     edge), giving Test; Clean test negatives: int(TestFrac·|nonN|) uniform
//     non-neighbours in the input graph (capped by MaxNegatives);
//  3. protection: protect.Synthetic(Test, Sigma, NonEdgeFrac);
//  4. dev pairs: positives are int(DevFrac·deg_Test(q)) of q's non-protected
//     neighbours in Test (fewer if there are not that many); negatives are
//     int(DevFrac·|pool|) of the pool = non-neighbours of q in the input
//     graph minus q's test negatives minus pairs protected at q (so no held-
//     out edge is ever a dev negative and no protected pair is ever used);
//  5. Train = Test minus protected edges minus dev positives of the training
//     queries.
func buildClean(g *graph.Graph, cfg Config, rng *rand.Rand) (*Split, error) {
	n := g.N()
	ranked := RankByTriangles(g)[:frac(cfg.QueryFrac, n)]
	var queries []int32
	for _, q := range ranked {
		d := g.Degree(q)
		if frac(cfg.TestFrac, d) >= 1 && frac(cfg.TestFrac, n-1-d) >= 1 {
			queries = append(queries, q)
		}
	}
	if len(queries) == 0 {
		return nil, errors.New("protocol: no candidate query has enough neighbours and non-neighbours to hold out one of each")
	}
	slices.Sort(queries)
	sd := seeds(rng, len(queries))

	testPos := make([][]int32, len(queries))
	testNeg := make([][]int32, len(queries))
	parallel(len(queries), n, func(s *sampler, i int) {
		q := queries[i]
		nb := g.Neighbors(q)
		k := frac(cfg.TestFrac, len(nb))
		s.reset(sd[i], streamTestPos)
		testPos[i] = s.fromList(make([]int32, 0, k), nb, k)
		if cfg.Kind == Deployment {
			testNeg[i] = []int32{}
			return
		}
		one := [1]int32{q}
		s.bufA = union(s.bufA, nb, one[:])
		k = capNeg(frac(cfg.TestFrac, n-len(s.bufA)), cfg.MaxNegatives)
		s.reset(sd[i], streamTestNeg)
		testNeg[i] = s.fromComplement(make([]int32, 0, k), n, s.bufA, k)
	})

	removed := newPairSet(n, func(emit func(a, b int32)) {
		for i, q := range queries {
			for _, v := range testPos[i] {
				emit(q, v)
			}
		}
	})
	test := g.Without(removed.has)

	prot, err := protect.Synthetic(test, cfg.Sigma, cfg.NonEdgeFrac, rng)
	if err != nil {
		return nil, err
	}

	devPos := make([][]int32, len(queries))
	devNeg := make([][]int32, len(queries))
	parallel(len(queries), n, func(s *sampler, i int) {
		q := queries[i]
		pq := prot.Of(q)
		s.reset(sd[i], streamDev)

		s.bufA = minus(s.bufA, test.Neighbors(q), pq) // non-protected neighbours in Test
		k := min(frac(cfg.DevFrac, test.Degree(q)), len(s.bufA))
		devPos[i] = s.fromList(make([]int32, 0, k), s.bufA, k)

		one := [1]int32{q}
		s.bufA = union(s.bufA, g.Neighbors(q), one[:])
		s.bufB = union(s.bufB, s.bufA, testNeg[i])
		s.bufA = union(s.bufA, s.bufB, pq)
		k = capNeg(frac(cfg.DevFrac, n-len(s.bufA)), cfg.MaxNegatives)
		devNeg[i] = s.fromComplement(make([]int32, 0, k), n, s.bufA, k)
	})

	sp := &Split{
		Kind: cfg.Kind, Config: cfg,
		Queries: queries, Test: test, Prot: prot, TestPos: testPos, TestNeg: testNeg,
		TrainProt: prot,
	}
	for i, q := range queries {
		if len(devPos[i]) > 0 && len(devNeg[i]) > 0 {
			sp.TrainQueries = append(sp.TrainQueries, q)
			sp.DevPos = append(sp.DevPos, devPos[i])
			sp.DevNeg = append(sp.DevNeg, devNeg[i])
		}
	}
	devSet := newPairSet(n, func(emit func(a, b int32)) {
		for i, q := range sp.TrainQueries {
			for _, v := range sp.DevPos[i] {
				emit(q, v)
			}
		}
	})
	sp.Train = test.Without(func(a, b int32) bool { return prot.Has(a, b) || devSet.has(a, b) })

	var protEdges int64
	for _, p := range prot.Pairs() {
		if test.HasEdge(p.U, p.V) {
			protEdges++
		}
	}
	sp.Stats = Stats{
		Ranked:       len(ranked),
		SizeFiltered: len(queries),
		TestListed:   listed(testPos),
		TestRemoved:  g.M() - test.M(),
		DevListed:    listed(sp.DevPos),
		DevRemoved:   test.M() - protEdges - sp.Train.M(),
		Protected:    prot.Len(),
	}
	return sp, nil
}

func listed(lists [][]int32) int64 {
	var c int64
	for _, l := range lists {
		c += int64(len(l))
	}
	return c
}
