package gen

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
)

// LatentGraph is a graph drawn from the latent-space model together with its
// latent coordinates, so that the oracle ranking of the paper's Section 5
// (candidates in increasing latent distance) can be computed.
type LatentGraph struct {
	*graph.Graph
	Dim    int       // dimension D of the latent space
	Coords []float64 // node u's point is Coords[u*Dim : (u+1)*Dim]
	R      float64   // connection radius r: {u, v} is an edge iff Dist(u, v) < R
}

// Point returns node u's latent coordinates (aliases Coords; do not modify).
func (lg *LatentGraph) Point(u int32) []float64 {
	return lg.Coords[int(u)*lg.Dim : (int(u)+1)*lg.Dim]
}

// Dist is the Euclidean latent distance between u and v. It is computed
// exactly as the generator's edge test, so HasEdge(u, v) == (u != v && Dist(u, v) < R).
func (lg *LatentGraph) Dist(u, v int32) float64 {
	return math.Sqrt(sqDist(lg.Point(u), lg.Point(v)))
}

func sqDist(a, b []float64) float64 {
	var s float64
	for i, x := range a {
		d := x - b[i]
		s += d * d
	}
	return s
}

// UnitBallVolume is the volume of the D-dimensional ball of radius 1,
// pi^(D/2) / Gamma(D/2 + 1).
func UnitBallVolume(dim int) float64 {
	d := float64(dim)
	lg, _ := math.Lgamma(d/2 + 1)
	return math.Exp(d/2*math.Log(math.Pi) - lg)
}

// BallRadius is the radius R_D of the D-dimensional ball of unit volume,
// (Gamma(D/2 + 1) / pi^(D/2))^(1/D).
func BallRadius(dim int) float64 {
	return math.Pow(UnitBallVolume(dim), -1/float64(dim))
}

// RadiusForMeanDegree returns the connection radius r for which a node has
// meanDeg neighbours in expectation when boundary effects are ignored:
// a node deep inside the unit-volume ball sees each of the other n-1 nodes
// within distance r with probability V_D r^D (the volume of the r-ball), so
// r = (meanDeg / ((n-1) V_D))^(1/D). Nodes near the boundary lose part of
// their r-ball, so the realised mean degree is somewhat lower, the more so
// for larger D and r.
func RadiusForMeanDegree(n, dim int, meanDeg float64) (float64, error) {
	if err := checkN(n); err != nil {
		return 0, err
	}
	if dim < 1 {
		return 0, fmt.Errorf("gen: dim = %d, need dim >= 1", dim)
	}
	if !(meanDeg > 0) || math.IsInf(meanDeg, 0) {
		return 0, fmt.Errorf("gen: mean degree %g, need a finite value > 0", meanDeg)
	}
	if meanDeg > float64(n-1) {
		return 0, fmt.Errorf("gen: mean degree %g exceeds n-1 = %d", meanDeg, n-1)
	}
	return math.Pow(meanDeg/(float64(n-1)*UnitBallVolume(dim)), 1/float64(dim)), nil
}

// Latent draws the latent-space graph of the paper's Section 5 (Sarkar,
// Chakrabarti and Moore 2011): n points uniform in the D-dimensional ball of
// unit volume centred at the origin, and an edge between u and v iff their
// Euclidean distance is < r. Nodes without neighbours are kept.
//
// Neighbour search uses a uniform grid of cells of side >= r over the first
// min(D, 3) coordinates, so the cost is about n times the number of points
// in a few cells rather than n^2.
func Latent(n, dim int, r float64, rng *rand.Rand) (*LatentGraph, error) {
	if err := checkN(n); err != nil {
		return nil, err
	}
	if dim < 1 {
		return nil, fmt.Errorf("gen: dim = %d, need dim >= 1", dim)
	}
	if !(r > 0) || math.IsInf(r, 0) {
		return nil, fmt.Errorf("gen: radius r = %g, need a finite value > 0", r)
	}
	if err := checkRNG(rng); err != nil {
		return nil, err
	}
	if exp := float64(pairs(n)) * math.Min(1, UnitBallVolume(dim)*math.Pow(r, float64(dim))); exp > float64(MaxEdges) {
		return nil, fmt.Errorf("gen: latent graph would have about %.3g edges, more than MaxEdges = %d", exp, MaxEdges)
	} else if err := checkMemory("latent graph", n, exp, float64(n)*(16*float64(dim)+44)+24*exp); err != nil {
		// Per node: coordinates in node and in cell order (16 D), cell
		// index, id map and fill pointers (12), up to two cells (8),
		// FromEdges' offsets (16), rounding (8). Per edge: the per-worker
		// lists, their merge and FromEdges' adjacency (8 each).
		return nil, err
	}
	R := BallRadius(dim)
	coords := make([]float64, n*dim)
	for u := 0; u < n; u++ {
		samplePointInBall(coords[u*dim:(u+1)*dim], R, rng)
	}
	edges := latentEdges(n, dim, coords, r, R)
	g, err := build(n, edges, fmt.Sprintf("latent n=%d dim=%d r=%g", n, dim, r))
	if err != nil {
		return nil, err
	}
	return &LatentGraph{Graph: g, Dim: dim, Coords: coords, R: r}, nil
}

// samplePointInBall writes a uniform point of the ball of radius R into x:
// an isotropic Gaussian direction scaled to radius R * U^(1/D).
func samplePointInBall(x []float64, R float64, rng *rand.Rand) {
	for {
		var s float64
		for i := range x {
			x[i] = rng.NormFloat64()
			s += x[i] * x[i]
		}
		if s == 0 {
			continue
		}
		scale := R * math.Pow(rng.Float64(), 1/float64(len(x))) / math.Sqrt(s)
		for i := range x {
			x[i] *= scale
		}
		return
	}
}

// maxGridDims bounds the number of gridded coordinates (the half stencil has
// (3^g - 1)/2 cells).
const maxGridDims = 8

// gridShape picks how many leading coordinates to grid (gd) and the number of
// cells per axis (k, of side 2R/k >= r, with a margin for rounding). More
// gridded axes prune more pairs, a factor of about 3/k each, but cost 3^gd/2
// cell visits per non-empty cell; the dense cell table k^gd is kept O(n).
// gd minimises a rough estimate of distance checks plus cell visits.
func gridShape(n, dim int, r, R float64) (gd, k int) {
	k0 := int(math.Floor(2 * R / (r * (1 + 1e-9))))
	maxCells := float64(max(2*n, 64))
	best := math.Inf(1)
	gd, k = 1, 1
	for g := 1; g <= min(dim, maxGridDims); g++ {
		kg := min(k0, int(math.Floor(math.Pow(maxCells, 1/float64(g)))))
		// Floor of the float root may be off by one either way.
		for kg > 1 && math.Pow(float64(kg), float64(g)) > maxCells {
			kg--
		}
		kg = max(kg, 1)
		cells := math.Pow(float64(kg), float64(g))
		visits := math.Pow(3, float64(g)) / 2 * math.Min(cells, float64(n))
		checks := float64(n) * float64(n) / 2 * math.Pow(math.Min(1, 3/float64(kg)), float64(g))
		if cost := checks*float64(dim)/4 + visits; cost < best {
			best, gd, k = cost, g, kg
		}
	}
	return gd, k
}

// latentEdges lists every pair at distance < r once.
func latentEdges(n, dim int, coords []float64, r, R float64) []graph.Edge {
	gd, k := gridShape(n, dim, r, R)
	side := 2 * R / float64(k)
	numCells := 1
	for range gd {
		numCells *= k
	}

	// Counting sort of the points by cell; xs holds the coordinates in cell
	// order for locality and ids maps that order back to node ids.
	cellOf := make([]int32, n)
	start := make([]int32, numCells+1)
	for u := 0; u < n; u++ {
		c, mul := 0, 1
		for a := range gd {
			ca := int((coords[u*dim+a] + R) / side)
			ca = min(max(ca, 0), k-1)
			c += ca * mul
			mul *= k
		}
		cellOf[u] = int32(c)
		start[c+1]++
	}
	for c := 0; c < numCells; c++ {
		start[c+1] += start[c]
	}
	ids := make([]int32, n)
	xs := make([]float64, n*dim)
	fill := make([]int32, numCells)
	copy(fill, start[:numCells])
	for u := 0; u < n; u++ {
		i := fill[cellOf[u]]
		fill[cellOf[u]]++
		ids[i] = int32(u)
		copy(xs[int(i)*dim:(int(i)+1)*dim], coords[u*dim:(u+1)*dim])
	}
	cellOf, fill = nil, nil

	// Half stencil: neighbour cell offsets whose first non-zero component is +1,
	// so each pair of distinct cells is visited once.
	var stencil [][maxGridDims]int
	var o [maxGridDims]int
	var rec func(a int)
	rec = func(a int) {
		if a == gd {
			for _, v := range o[:gd] {
				if v != 0 {
					if v > 0 {
						stencil = append(stencil, o)
					}
					return
				}
			}
			return
		}
		for d := -1; d <= 1; d++ {
			o[a] = d
			rec(a + 1)
		}
		o[a] = 0
	}
	rec(0)

	// The edge test matches LatentGraph.Dist exactly: sqrt is correctly
	// rounded and monotone, so d2 > r2hi implies sqrt(d2) >= r, and the partial
	// sums of squares never decrease, so the early exit is exact too.
	r2hi := math.Nextafter(r*r, math.Inf(1))
	isEdge := func(i, j int) bool {
		a, b := xs[i*dim:(i+1)*dim], xs[j*dim:(j+1)*dim]
		var s float64
		for t, x := range a {
			d := x - b[t]
			s += d * d
			if s > r2hi {
				return false
			}
		}
		return math.Sqrt(s) < r
	}

	// Each worker collects its edges in its own list; FromEdges does not
	// depend on their order.
	workers := runtime.GOMAXPROCS(0)
	parts := make([][]graph.Edge, workers)
	par.Run(context.Background(), numCells, par.Options{Workers: workers, Chunk: 256}, func(w int) *[]graph.Edge { return &parts[w] }, func(out *[]graph.Edge, c int) error {
		var cc [maxGridDims]int
		s, e := int(start[c]), int(start[c+1])
		if s == e {
			return nil
		}
		rest := c
		for a := range gd {
			cc[a] = rest % k
			rest /= k
		}
		for i := s; i < e; i++ {
			for j := i + 1; j < e; j++ {
				if isEdge(i, j) {
					*out = append(*out, graph.Edge{U: ids[i], V: ids[j]})
				}
			}
		}
	stencilLoop:
		for _, off := range stencil {
			c2, mul := 0, 1
			for a := range gd {
				x := cc[a] + off[a]
				if x < 0 || x >= k {
					continue stencilLoop
				}
				c2 += x * mul
				mul *= k
			}
			s2, e2 := int(start[c2]), int(start[c2+1])
			for i := s; i < e; i++ {
				for j := s2; j < e2; j++ {
					if isEdge(i, j) {
						*out = append(*out, graph.Edge{U: ids[i], V: ids[j]})
					}
				}
			}
		}
		return nil
	})
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	edges := make([]graph.Edge, 0, total)
	for _, p := range parts {
		edges = append(edges, p...)
	}
	return edges
}
