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
// Scores must be finite and lie in [lo, hi]; a pair listed twice, an
// unknown label, a self-pair or a bad number is an error naming the line.
// The pair function looks up (u, v), then (v, u); pairs not listed score lo.
func ReadScores(path string, g *graph.Graph, lo, hi float64) (score.PairFunc, error) {
	r, c, err := graph.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	vals := make(map[uint64]float64)
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
		key := uint64(uint32(u))<<32 | uint64(uint32(v))
		if _, dup := vals[key]; dup {
			return fmt.Errorf("pair %q,%q listed twice", a, b)
		}
		vals[key] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(u, v int32) float64 {
		if s, ok := vals[uint64(uint32(u))<<32|uint64(uint32(v))]; ok {
			return s
		}
		if s, ok := vals[uint64(uint32(v))<<32|uint64(uint32(u))]; ok {
			return s
		}
		return lo
	}, nil
}
