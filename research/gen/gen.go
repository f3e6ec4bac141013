// Package gen generates seeded synthetic graphs: the latent-space model of the
// paper's Section 5 (whose distances give an oracle ranking), Barabási-Albert
// preferential attachment and Erdős-Rényi graphs, plus a fast edge-list writer.
//
// Every generator takes an explicit *rand.Rand, so equal seeds give equal
// graphs. Parameters are validated and bad input returns an error.
package gen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
)

// MaxEdges bounds the (expected) number of edges a generator will build, so
// that an absurd request fails with an error instead of exhausting memory.
// At the bound the edge list alone takes 8 GiB.
const MaxEdges int64 = 1 << 30

// MaxBytes bounds a generator's estimated peak memory (the generator's own
// arrays plus graph.FromEdges'), so that a request the machine cannot hold
// fails with an error naming the size instead of dying out of memory with a
// stack trace. The estimates count 8-byte edges, int32 adjacency, int64
// per-node offsets and, for the latent model, the coordinates (twice: in
// node and in grid-cell order) and the per-worker edge lists (merged once).
const MaxBytes int64 = 8 << 30

// checkMemory refuses a generation of n nodes and about edges edges whose
// estimated peak memory need (bytes) exceeds MaxBytes.
func checkMemory(what string, n int, edges, need float64) error {
	if !(need <= float64(MaxBytes)) {
		return fmt.Errorf("gen: %s with %d nodes and about %.3g edges would need about %.3g GB of memory, more than MaxBytes = %.3g GB",
			what, n, edges, need/1e9, float64(MaxBytes)/1e9)
	}
	return nil
}

// ErrNoEdges is returned (wrapped, together with graph.ErrEmpty) when a draw
// produced no edges; increase the density parameter.
var ErrNoEdges = errors.New("gen: generated graph has no edges")

func checkN(n int) error {
	if n < 2 {
		return fmt.Errorf("gen: n = %d, need at least 2 nodes", n)
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("gen: n = %d exceeds the int32 node id range", n)
	}
	return nil
}

func checkRNG(rng *rand.Rand) error {
	if rng == nil {
		return errors.New("gen: nil random generator")
	}
	return nil
}

// pairs is the number of unordered node pairs n(n-1)/2.
func pairs(n int) int64 { return int64(n) * int64(n-1) / 2 }

// build wraps graph.FromEdges for generators that never emit self-loops or
// duplicates: any merge is an internal bug and reported as such.
func build(n int, edges []graph.Edge, what string) (*graph.Graph, error) {
	g, st, err := graph.FromEdges(n, edges, nil)
	if errors.Is(err, graph.ErrEmpty) {
		return nil, fmt.Errorf("%w (%s): %w", ErrNoEdges, what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("gen: %s: %w", what, err)
	}
	if st.SelfLoopsDropped != 0 || st.DuplicatesMerged != 0 {
		return nil, fmt.Errorf("gen: internal error in %s: %d self-loops, %d duplicates", what, st.SelfLoopsDropped, st.DuplicatesMerged)
	}
	return g, nil
}
