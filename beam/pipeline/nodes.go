package pipeline

import (
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Node is one node's record: its label, sorted neighbours and sorted
// protection partners (marks; a marked pair may be a non-edge). For JC the
// neighbours' degrees are attached (NDeg, NPubDeg aligned with Nbrs).
type Node struct {
	ID      int32
	Label   string
	Nbrs    []int32
	Prot    []int32
	NDeg    []int32
	NPubDeg []int32
}

// Has reports whether x is in the sorted list xs.
func has(xs []int32, x int32) bool {
	_, ok := slices.BinarySearch(xs, x)
	return ok
}

// PubDeg is the number of neighbours over non-protected edges.
func (n *Node) PubDeg() int32 {
	d := int32(0)
	for _, x := range n.Nbrs {
		if !has(n.Prot, x) {
			d++
		}
	}
	return d
}

func swapLabel(label string, id int32) (int32, string) { return id, label }

func sortedSet(it func(*int32) bool) []int32 {
	var xs []int32
	var x int32
	for it(&x) {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

func buildNodeFn(id int32, labels func(*string) bool, nbrs func(*int32) bool, prot func(*int32) bool, emit func(Node)) error {
	var label string
	if !labels(&label) {
		return fmt.Errorf("node id %d without a label (internal error)", id)
	}
	emit(Node{ID: id, Label: label, Nbrs: sortedSet(nbrs), Prot: sortedSet(prot)})
	return nil
}

// Nodes builds every node's record from the (id, label) table and the
// directed edges and marks (both orders).
func Nodes(s beam.Scope, idLabels, edges, marks beam.PCollection) beam.PCollection {
	s = s.Scope("Nodes")
	return beam.ParDo(s, buildNodeFn, beam.CoGroupByKey(s, idLabels, edges, marks))
}

// NbrDeg is a neighbour's degrees, sent to each of its neighbours (JC).
type NbrDeg struct {
	V, Deg, PubDeg int32
}

func sendDegrees(n Node, emit func(int32, NbrDeg)) {
	d := NbrDeg{V: n.ID, Deg: int32(len(n.Nbrs)), PubDeg: n.PubDeg()}
	for _, z := range n.Nbrs {
		emit(z, d)
	}
}

func keyNode(n Node) (int32, Node) { return n.ID, n }

func attachDegreesFn(id int32, nodes func(*Node) bool, degs func(*NbrDeg) bool, emit func(Node)) error {
	var n Node
	if !nodes(&n) {
		return fmt.Errorf("degrees for unknown node %d (internal error)", id)
	}
	m := make(map[int32]NbrDeg, len(n.Nbrs))
	var d NbrDeg
	for degs(&d) {
		m[d.V] = d
	}
	n.NDeg = make([]int32, len(n.Nbrs))
	n.NPubDeg = make([]int32, len(n.Nbrs))
	for i, v := range n.Nbrs {
		x, ok := m[v]
		if !ok {
			return fmt.Errorf("node %d: no degrees for neighbour %d (internal error)", id, v)
		}
		n.NDeg[i], n.NPubDeg[i] = x.Deg, x.PubDeg
	}
	emit(n)
	return nil
}

// WithNeighbourDegrees attaches every neighbour's degree and public degree
// to each node record (one more shuffle of 2|E| small records; JC only).
func WithNeighbourDegrees(s beam.Scope, nodes beam.PCollection) beam.PCollection {
	s = s.Scope("NeighbourDegrees")
	return beam.ParDo(s, attachDegreesFn, beam.CoGroupByKey(s, beam.ParDo(s, keyNode, nodes), beam.ParDo(s, sendDegrees, nodes)))
}
