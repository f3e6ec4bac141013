package graph

// Isolated returns a graph of n nodes and no edges (FromEdges refuses an
// empty edge list), with the given labels (nil: ids as labels). Differential
// tests need it: toggling every edge of a tiny graph away is a valid
// neighbour.
func Isolated(n int, labels []string) *Graph {
	return &Graph{Off: make([]int64, n+1), labels: labels}
}
