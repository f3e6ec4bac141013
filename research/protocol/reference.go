package protocol

import (
	"errors"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/sorted"
	"github.com/dplp/dplp/protect"
)

// buildReference implements the authors' protocol (reference-implementation
// §1.2-§1.6) with our generator in place of Python's:
//
//  1. ranked queries: the first int(QueryFrac·N) nodes by decreasing |W2|;
//  2. per ranked query q: test positives = int(TestFrac·|Nbr|) of Nbr(q) (full
//     graph), training neighbours = the rest; dev positives =
//     int(DevFrac·|trainNbr|) of those; test negatives = int(TestFrac·|NonNbr|)
//     of all non-neighbours, dev negatives = int(DevFrac·|trainNonNbr|) of the
//     remaining ones;
//  3. the removal quirk: the listed test edge (q,v) is not removed when v is a
//     ranked query that kept q among its training neighbours; G_sample = G
//     minus the remaining listed edges (an edge listed by both endpoints is
//     removed). The same rule with true-training lists turns G_sample into
//     G_true_train;
//  4. protection: Gp = G_sample minus int((1−σ)·|E|) uniform edges; the
//     surviving edges are protected, non-edges never;
//  5. FQ = {q : both test counts > 0, some test positive not in Gp} ∩
//     {q : both dev counts > 0, some dev positive not in Gp}, ascending.
//
// Negatives do not influence any filter (non-edges are never protected), so
// they are drawn only for FQ, from each query's own stream.
func buildReference(g *graph.Graph, cfg Config, rng *rand.Rand) (*Split, error) {
	n := g.N()
	ranked := RankByW2(g)[:frac(cfg.QueryFrac, n)]
	if len(ranked) == 0 {
		return nil, errors.New("protocol: query fraction selects no node")
	}
	qidx := make([]int32, n) // index in ranked, or -1
	for i := range qidx {
		qidx[i] = -1
	}
	for i, q := range ranked {
		qidx[q] = int32(i)
	}
	sd := seeds(rng, len(ranked))

	nq := len(ranked)
	testPos := make([][]int32, nq)
	devPos := make([][]int32, nq)
	nTest := make([]int, nq) // test negatives to draw (after the cap)
	nDev := make([]int, nq)
	testOK := make([]bool, nq) // filtered_queries_test
	devOK := make([]bool, nq)  // filtered_queries_dev
	parallel(nq, n, func(s *sampler, i int) {
		q := ranked[i]
		nb := g.Neighbors(q)
		s.reset(sd[i], streamTestPos)
		kT := frac(cfg.TestFrac, len(nb))
		testPos[i] = s.fromList(make([]int32, 0, kT), nb, kT)
		s.bufA = sorted.Minus(s.bufA, nb, testPos[i]) // trainNbr
		kD := frac(cfg.DevFrac, len(s.bufA))
		devPos[i] = s.fromList(make([]int32, 0, kD), s.bufA, kD)

		nonNbr := n - 1 - len(nb)
		nt := frac(cfg.TestFrac, nonNbr)
		nTest[i] = capNeg(nt, cfg.MaxNegatives)
		nd := frac(cfg.DevFrac, nonNbr-nTest[i])
		nDev[i] = capNeg(nd, cfg.MaxNegatives)
		testOK[i] = kT > 0 && nt > 0
		devOK[i] = kD > 0 && nd > 0
	})

	// keptForTraining(q, v): v is a ranked query and q is among v's training
	// neighbours (q is a neighbour of v whenever this is asked).
	trainNbrOf := func(v, q int32) bool {
		j := qidx[v]
		return j >= 0 && !contains(testPos[j], q)
	}
	var testKept, devKept int64
	for i, q := range ranked {
		for _, v := range testPos[i] {
			if trainNbrOf(v, q) {
				testKept++
			}
		}
		for _, v := range devPos[i] {
			if trainNbrOf(v, q) && !contains(devPos[qidx[v]], q) {
				devKept++
			}
		}
	}
	testRem := newPairSet(n, func(emit func(a, b int32)) {
		for i, q := range ranked {
			for _, v := range testPos[i] {
				if !trainNbrOf(v, q) {
					emit(q, v)
				}
			}
		}
	})
	test := g.Without(testRem.has)
	devRem := newPairSet(n, func(emit func(a, b int32)) {
		for i, q := range ranked {
			for _, v := range devPos[i] {
				// Dropped when q is among v's true-training neighbours.
				if !(trainNbrOf(v, q) && !contains(devPos[qidx[v]], q)) {
					emit(q, v)
				}
			}
		}
	})
	train := test.Without(devRem.has)

	edges := test.EdgeList()
	keep := len(edges) - frac(1-cfg.Sigma, len(edges))
	for i := 0; i < keep; i++ { // partial Fisher-Yates: a uniform keep-subset
		j := i + rng.IntN(len(edges)-i)
		edges[i], edges[j] = edges[j], edges[i]
	}
	prot, err := protect.New(n, edges[:keep])
	if err != nil {
		return nil, err
	}

	anyPublic := func(q int32, list []int32) bool {
		for _, v := range list {
			if !prot.Has(q, v) {
				return true
			}
		}
		return false
	}
	st := Stats{Ranked: nq, Protected: prot.Len(),
		TestListed: listed(testPos), TestKept: testKept, TestRemoved: g.M() - test.M(),
		DevListed: listed(devPos), DevKept: devKept, DevRemoved: test.M() - train.M()}
	var fq []int32
	for i, q := range ranked {
		tp := testOK[i] && anyPublic(q, testPos[i])
		dp := devOK[i] && anyPublic(q, devPos[i])
		st.SizeFiltered += b2i(testOK[i])
		st.DevSizeFiltered += b2i(devOK[i])
		st.TestPrivate += b2i(tp)
		st.DevPrivate += b2i(dp)
		if tp && dp {
			fq = append(fq, q)
		}
	}
	if len(fq) == 0 {
		return nil, errors.New("protocol: no query passes the reference filters")
	}
	slices.Sort(fq)

	sp := &Split{
		Kind: Reference, Config: cfg,
		Queries: fq, Test: test, Prot: prot, Train: train, TrainProt: prot,
		TrainQueries: slices.Clone(fq),
		TestPos:      make([][]int32, len(fq)), TestNeg: make([][]int32, len(fq)),
		DevPos: make([][]int32, len(fq)), DevNeg: make([][]int32, len(fq)),
		RefA: make([]int, len(fq)), RefTrainA: make([]int, len(fq)),
		RefMaxDeg: test.MaxDegree(), RefTrainMaxDeg: train.MaxDegree(),
		Stats: st,
		ref:   &refState{ranked: ranked, testPos: testPos, devPos: devPos},
	}
	parallel(len(fq), n, func(s *sampler, k int) {
		q := fq[k]
		i := qidx[q]
		sp.TestPos[k], sp.DevPos[k] = testPos[i], devPos[i]
		s.reset(sd[i], streamTestNeg)
		one := [1]int32{q}
		s.bufA = union(s.bufA, g.Neighbors(q), one[:])
		sp.TestNeg[k] = s.fromComplement(make([]int32, 0, nTest[i]), n, s.bufA, nTest[i])
		s.bufB = union(s.bufB, s.bufA, sp.TestNeg[k]) // NonNbr \ trainNonNbr
		sp.DevNeg[k] = s.fromComplement(make([]int32, 0, nDev[i]), n, s.bufB, nDev[i])
		sp.RefA[k] = intersectCount(test.Neighbors(q), prot.Of(q))
		sp.RefTrainA[k] = intersectCount(train.Neighbors(q), prot.Of(q))
	})
	return sp, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// intersectCount is |a ∩ b| for sorted a, b.
func intersectCount(a, b []int32) int {
	c, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			c++
			i++
			j++
		}
	}
	return c
}

// refState keeps the authors' per-ranked-query positive lists (all ranked
// queries, not only FQ), which the removal quirk depends on; tests re-derive
// G_sample and G_true_train from it.
type refState struct {
	ranked          []int32
	testPos, devPos [][]int32
}
