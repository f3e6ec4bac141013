package pipeline

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Node ids. graph.Parse numbers labels in order of first appearance (line
// by line, the first column before the second), self-loop lines included.
// Here every label is keyed by its earliest 2*Pos+column (a per-key Min,
// combined before the shuffle), and the (position, label) pairs are then
// gathered on ONE worker and sorted: the rank is the id. This is the
// pipeline's only global step over nodes: O(|V| log |V|) time and the
// labels' bytes of memory on that worker. Edges and marks are then joined
// with the (label, id) table by two CoGroupByKeys (one per endpoint).

// LabelPos is a label and its earliest position.
type LabelPos struct {
	Pos   int64
	Label string
}

func firstPositions(p Pair, emit func(string, int64)) {
	emit(p.A, 2*p.Pos)
	emit(p.B, 2*p.Pos+1)
}

func minInt64(a, b int64) int64 { return min(a, b) }

func toLabelPos(label string, pos int64) LabelPos { return LabelPos{Pos: pos, Label: label} }

// rankFn sorts every label by first position and emits (label, id).
func rankFn(_ int, it func(*LabelPos) bool, emit func(string, int32)) error {
	var all []LabelPos
	var lp LabelPos
	for it(&lp) {
		all = append(all, lp)
	}
	if len(all) > 1<<31-1 {
		return fmt.Errorf("more than 2^31-1 distinct node labels")
	}
	slices.SortFunc(all, func(a, b LabelPos) int { return cmp.Compare(a.Pos, b.Pos) })
	for i, x := range all {
		emit(x.Label, int32(i))
	}
	return nil
}

// NodeIDs assigns graph.Parse's ids to the labels of the edge lines.
func NodeIDs(s beam.Scope, edges beam.PCollection) beam.PCollection {
	s = s.Scope("NodeIDs")
	first := beam.CombinePerKey(s, minInt64, beam.ParDo(s, firstPositions, edges))
	lp := beam.ParDo(s, toLabelPos, first)
	return beam.ParDo(s, rankFn, beam.GroupByKey(s, beam.AddFixedKey(s, lp)))
}

// Half is a line with one endpoint resolved.
type Half struct {
	Pos   int64
	ID    int32
	Other string
}

func keyByA(p Pair) (string, Half) { return p.A, Half{Pos: p.Pos, Other: p.B} }

// resolveFn joins a label's id with the lines naming it.
type resolveFn struct {
	Path  string
	Marks bool // protection marks: unknown labels are errors
	Final bool // second endpoint: emit (id, id) pairs
}

func (f *resolveFn) ProcessElement(label string, ids func(*int32) bool, halves func(*Half) bool, emitHalf func(string, Half), emitEdge func(int32, int32)) error {
	var id int32
	found := ids(&id)
	var h Half
	for halves(&h) {
		if !found {
			if f.Marks {
				return fmt.Errorf("%s: unknown node label %q (not in the graph)", describePos(f.Path, h.Pos), label)
			}
			return fmt.Errorf("%s: label %q has no id (internal error)", describePos(f.Path, h.Pos), label)
		}
		if !f.Final {
			emitHalf(h.Other, Half{Pos: h.Pos, ID: id, Other: label})
			continue
		}
		if f.Marks && h.ID == id {
			return fmt.Errorf("%s: node %q cannot protect a pair with itself", describePos(f.Path, h.Pos), label)
		}
		emitEdge(h.ID, id)
	}
	return nil
}

// Resolve turns lines into (id, id) pairs, both orders, self-loops dropped
// (edges) or refused (marks).
func Resolve(s beam.Scope, path string, marks bool, ids, lines beam.PCollection) beam.PCollection {
	s = s.Scope("Resolve")
	a := beam.CoGroupByKey(s, ids, beam.ParDo(s, keyByA, lines))
	halves, _ := beam.ParDo2(s, &resolveFn{Path: path, Marks: marks}, a)
	b := beam.CoGroupByKey(s, ids, halves)
	_, pairs := beam.ParDo2(s, &resolveFn{Path: path, Marks: marks, Final: true}, b)
	return beam.ParDo(s, bothWays, pairs)
}

func bothWays(u, v int32, emit func(int32, int32)) {
	if u == v {
		return // self-loop: dropped (its labels still have ids)
	}
	emit(u, v)
	emit(v, u)
}
