package protocol

import (
	"slices"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
)

// TestCleanSplitInvariant is the differential test of privacy-model §5 for
// the split: toggling any subset of one node's protected pairs (a
// neighbouring graph, with the same marks and seed) changes none of the
// queries, test pairs, dev pairs or the training graph.
func TestCleanSplitInvariant(t *testing.T) {
	r := randx.Seeded(11)
	for it := 0; it < 6; it++ {
		g := randomGraph(t, r, 25, 45, 0.1, 0.5)
		marks, err := protect.Synthetic(g, 0.3, 0.05, randx.Derive(uint64(it), 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []Kind{Clean, Deployment} {
			cfg := Config{Kind: kind, Marks: marks, MaxNegatives: []int{0, 4}[it%2]}
			base, err := Build(g, cfg, randx.Seeded(uint64(it)))
			if err != nil {
				t.Fatal(err)
			}
			toggles := 0
			// u = -1: no node is excluded, so every subset of prot(w) is a
			// toggle some query's neighbour may make.
			err = marks.Neighbours(g, -1, 6, func(w int32, xs []int32, g2 *graph.Graph) error {
				toggles++
				s2, err := Build(g2, cfg, randx.Seeded(uint64(it)))
				if err != nil {
					t.Fatalf("toggle %d %v: %v", w, xs, err)
				}
				if d := splitDiff(base, s2); d != "" {
					t.Fatalf("graph %d, %v: toggling w=%d pairs %v changes the split's %s", it, kind, w, xs, d)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if toggles == 0 {
				t.Fatal("no neighbouring graph enumerated")
			}
		}
	}
}

func splitDiff(a, b *Split) string {
	eq := func(x, y [][]int32) bool { return slices.EqualFunc(x, y, slices.Equal[[]int32]) }
	switch {
	case !slices.Equal(a.Queries, b.Queries):
		return "queries"
	case !eq(a.TestPos, b.TestPos):
		return "test positives"
	case !eq(a.TestNeg, b.TestNeg):
		return "test negatives"
	case !slices.Equal(a.TrainQueries, b.TrainQueries):
		return "training queries"
	case !eq(a.DevPos, b.DevPos):
		return "dev positives"
	case !eq(a.DevNeg, b.DevNeg):
		return "dev negatives"
	case !slices.Equal(a.Train.EdgeList(), b.Train.EdgeList()):
		return "training graph"
	}
	return ""
}
