package protocol

import (
	"errors"
	"fmt"
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

// buildClean implements the Clean and Deployment protocols. Everything that
// shapes the trained transform (queries, training pairs and their counts,
// the training graph) is computed from invariant data only: the public graph
// G_pub (protected edges removed) and the marks (privacy-model §2, §5). So
// the marks are drawn first, on the input graph:
//
//  1. protection: protect.Synthetic(g, Sigma, NonEdgeFrac); G_pub = g minus
//     the protected edges;
//  2. queries: the top int(QueryFrac·N) nodes by triangle count in G_pub
//     (ties by id) that can hold out at least one positive and one negative,
//     int(TestFrac·deg_pub) ≥ 1 and int(TestFrac·|nonN|) ≥ 1, where nonN are
//     the non-protected non-neighbours (both kinds use the same rule, so
//     they share the query set);
//  3. test positives: int(TestFrac·deg_pub) uniform non-protected neighbours
//     per query, removed from the graph in both directions (once if two
//     queries pick the same edge), giving Test (protected edges stay in
//     Test: they are the private evidence a mechanism must hide); Clean test
//     negatives: int(TestFrac·|nonN|) uniform non-protected non-neighbours
//     (capped by MaxNegatives);
//  4. dev pairs: positives are int(DevFrac·d) of q's d non-protected
//     neighbours in Test; negatives are int(DevFrac·|pool|) of the pool =
//     non-protected non-neighbours of q in the input graph minus q's test
//     negatives (so no held-out edge is ever a dev negative and no protected
//     pair is ever used);
//  5. Train = Test minus protected edges minus dev positives of the training
//     queries.
//
// Toggling protected pairs of Test therefore changes none of Queries,
// TestPos, TestNeg, DevPos, DevNeg or Train (a test checks it), so a
// transform trained on the split is shared safely by all queries.
func buildClean(g *graph.Graph, cfg Config, rng *rand.Rand) (*Split, error) {
	n := g.N()
	prot := cfg.Marks
	if prot == nil {
		var err error
		if prot, err = protect.Synthetic(g, cfg.Sigma, cfg.NonEdgeFrac, rng); err != nil {
			return nil, err
		}
	} else if prot.N() != n {
		return nil, fmt.Errorf("protocol: marks over %d nodes for a graph of %d", prot.N(), n)
	}
	pub := prot.Public(g)
	// nonProt(q) = non-protected non-neighbours of q: every protected pair
	// at q is a non-edge of G_pub.
	nonProt := func(q int32) int { return n - 1 - pub.Degree(q) - prot.Count(q) }
	ranked := RankByTriangles(pub)[:frac(cfg.QueryFrac, n)]
	var queries []int32
	for _, q := range ranked {
		if frac(cfg.TestFrac, pub.Degree(q)) >= 1 && frac(cfg.TestFrac, nonProt(q)) >= 1 {
			queries = append(queries, q)
		}
	}
	if len(queries) == 0 {
		return nil, errors.New("protocol: no candidate query has enough non-protected neighbours and non-neighbours to hold out one of each")
	}
	slices.Sort(queries)
	sd := seeds(rng, len(queries))

	testPos := make([][]int32, len(queries))
	testNeg := make([][]int32, len(queries))
	parallel(len(queries), n, func(s *sampler, i int) {
		q := queries[i]
		nb := pub.Neighbors(q)
		k := frac(cfg.TestFrac, len(nb))
		s.reset(sd[i], streamTestPos)
		testPos[i] = s.fromList(make([]int32, 0, k), nb, k)
		if cfg.Kind == Deployment {
			testNeg[i] = []int32{}
			return
		}
		one := [1]int32{q}
		s.bufB = union(s.bufB, nb, one[:])
		s.bufA = union(s.bufA, s.bufB, prot.Of(q))
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
	testPub := pub.Without(removed.has)

	devPos := make([][]int32, len(queries))
	devNeg := make([][]int32, len(queries))
	parallel(len(queries), n, func(s *sampler, i int) {
		q := queries[i]
		pq := prot.Of(q)
		s.reset(sd[i], streamDev)

		nb := testPub.Neighbors(q) // non-protected neighbours in Test
		k := frac(cfg.DevFrac, len(nb))
		devPos[i] = s.fromList(make([]int32, 0, k), nb, k)

		one := [1]int32{q}
		s.bufA = union(s.bufA, pub.Neighbors(q), one[:])
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
