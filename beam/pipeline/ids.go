package pipeline

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Node ids. graph.Parse numbers labels in order of first appearance (line
// by line, the first column before the second), self-loop lines included.
// Here every label is keyed by its earliest position 2*Pos+column (a
// per-key Min, combined before the shuffle). Positions order shards first,
// so a label's id is (number of labels first seen in earlier shards) +
// (its rank among the labels first seen in its own shard): labels are
// grouped by the shard of their first appearance and sorted there (work
// O(L log L) for the L labels first seen in a shard, on that shard's
// worker), and the only global step is the prefix sum of one count per
// shard (a side input of #shards integers). A compressed input is one
// shard, so its labels are ranked on one worker (O(|V| log |V|), the
// labels' bytes of memory). Edges and marks are then joined with the
// (label, id) table by two CoGroupByKeys (one per endpoint).

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

// byFirstShard keys a label by the shard of its first appearance.
func byFirstShard(label string, pos int64) (int64, LabelPos) {
	return pos >> (posShardShift + 1), LabelPos{Pos: pos, Label: label}
}

// Ranked is a label's rank within the shard of its first appearance.
type Ranked struct {
	Shard int64
	Rank  int32
	Label string
}

// ShardCount is the number of labels first seen in a shard.
type ShardCount struct {
	Shard int64
	N     int64
}

// rankInShardFn sorts the labels first seen in one shard.
func rankInShardFn(shard int64, it func(*LabelPos) bool, emit func(Ranked), count func(ShardCount)) error {
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
		emit(Ranked{Shard: shard, Rank: int32(i), Label: x.Label})
	}
	count(ShardCount{Shard: shard, N: int64(len(all))})
	return nil
}

// globalIDFn adds the labels of the earlier shards to the rank.
type globalIDFn struct {
	offsets map[int64]int64
}

func (f *globalIDFn) ProcessElement(r Ranked, counts func(*ShardCount) bool, emit func(string, int32)) error {
	if f.offsets == nil {
		var cs []ShardCount
		var c ShardCount
		for counts(&c) {
			cs = append(cs, c)
		}
		slices.SortFunc(cs, func(a, b ShardCount) int { return cmp.Compare(a.Shard, b.Shard) })
		f.offsets = make(map[int64]int64, len(cs))
		var sum int64
		for _, c := range cs {
			f.offsets[c.Shard] = sum
			sum += c.N
		}
		if sum > 1<<31-1 {
			return fmt.Errorf("%d distinct node labels: more than 2^31-1", sum)
		}
	}
	off, ok := f.offsets[r.Shard]
	if !ok {
		return fmt.Errorf("no label count for shard %d (internal error)", r.Shard)
	}
	emit(r.Label, int32(off+int64(r.Rank)))
	return nil
}

// NodeIDs assigns graph.Parse's ids to the labels of the edge lines.
func NodeIDs(s beam.Scope, edges beam.PCollection) beam.PCollection {
	s = s.Scope("NodeIDs")
	first := beam.CombinePerKey(s, minInt64, beam.ParDo(s, firstPositions, edges))
	ranked, counts := beam.ParDo2(s, rankInShardFn, beam.GroupByKey(s, beam.ParDo(s, byFirstShard, first)))
	return beam.ParDo(s, &globalIDFn{}, ranked, beam.SideInput{Input: counts})
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
