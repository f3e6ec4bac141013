package predict

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/score"
)

// ReadScores reads a user-supplied score file: lines "u,v,score" (commas or
// whitespace; '#' and '%' comments; .gz/.zst), labels as in the graph.
// Scores are undirected: "u,v" and "v,u" name the same pair, so listing
// both is allowed only with the same score (a conflict is an error naming
// the line), and a pair listed twice in the same direction is an error.
// Scores must be finite and lie in [lo, hi]; an unknown label, a self-pair
// or a bad number is an error naming the line. A file with no score line at
// all is an error (it would silently score every candidate lo). Pairs not
// listed score lo.
func ReadScores(path string, g *graph.Graph, lo, hi float64) (score.PairFunc, error) {
	r, c, err := graph.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	vals := make(map[uint64]float64)
	dir := make(map[uint64]bool) // direction of the first listing: u < v
	_, err = graph.ScanTriples(r, path, func(line int64, a, b, x []byte) error {
		u, ok := g.ID(string(a))
		if !ok {
			return fmt.Errorf("unknown node label %q (not in the graph)", a)
		}
		v, ok := g.ID(string(b))
		if !ok {
			return fmt.Errorf("unknown node label %q (not in the graph)", b)
		}
		if u == v {
			return fmt.Errorf("self-pair %q", a)
		}
		if x == nil {
			return fmt.Errorf("missing score column (want u,v,score)")
		}
		s, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("score %q is not a finite number", x)
		}
		if s < lo || s > hi {
			return fmt.Errorf("score %v outside the declared range [%v, %v]", s, lo, hi)
		}
		key := pairKey(u, v)
		if old, seen := vals[key]; seen {
			if dir[key] == (u < v) {
				return fmt.Errorf("pair %q,%q listed twice", a, b)
			}
			if old != s {
				return fmt.Errorf("pair %q,%q scored %v, but %q,%q was scored %v (scores are undirected)", a, b, s, b, a, old)
			}
			return nil
		}
		vals[key] = s
		dir[key] = u < v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("%s: no score lines (a file:PATH predictor needs at least one \"u,v,score\" line)", path)
	}
	return func(u, v int32) float64 {
		if s, ok := vals[pairKey(u, v)]; ok {
			return s
		}
		return lo
	}, nil
}

// pairKey is the undirected key of {u, v}.
func pairKey(u, v int32) uint64 {
	a, b := min(u, v), max(u, v)
	return uint64(uint32(a))<<32 | uint64(uint32(b))
}
