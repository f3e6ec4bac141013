package protect

import (
	"fmt"

	"github.com/dplp/dplp/graph"
)

// FromCSR makes a Set on len(off)-1 nodes from its CSR arrays (prot(w) is
// adj[off[w]:off[w+1]]), which the set then owns. It checks the invariants
// New establishes and returns an error, never panics, when one fails: offsets
// from 0 to len(adj), never decreasing; every list strictly increasing, in
// range and without self-pairs; every pair in both lists.
func FromCSR(off []int64, adj []int32) (*Set, error) {
	if _, err := graph.FromCSR(off, adj, nil); err != nil {
		return nil, fmt.Errorf("protect: invalid marks: %w", err)
	}
	return &Set{off: off, adj: adj}, nil
}
