package release

import (
	"slices"
	"strings"
	"sync"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// influence computes, for a user u, the protected parties w whose protected
// pairs can change u's utilities in some u-neighbouring graph: the set
// exposure(w) sums over (docs/privacy-model.md §6). It uses invariant data
// only (u's neighbours, the marks, and the union graph G ∪ P, which every
// neighbouring graph shares), so it is an exact-or-larger set:
//
//   - CN, AA, RA: toggling {w, x} (w, x != u) changes N(w) and N(x) only, so
//     s(u, v) moves only for v in {w, x} and only if the other endpoint is a
//     neighbour of u; AA and RA also move through deg(z) for z in N(u) in
//     {w, x}. So w influences u iff some x in prot(w) \ {u} has w in N(u)
//     or x in N(u).
//   - JC: JC(u, v) moves only for v in {w, x}, and JC(u, w) can move iff x
//     is in N(u) or N(u) ∩ N(w) is non-empty in some neighbour: w influences
//     u iff some x in prot(w) \ {u} has w or x in R(u) = N(u) ∪ N_{G∪P}(N(u)).
//   - PA and bounded scores (embeddings, score files): a degree or a fitted
//     model can change anywhere: every party ("*").
//
// The exact audit checks the sets on small graphs (toggling the pairs of a
// w outside the set never changes u's utilities).
type influence struct {
	g    *graph.Graph
	p    *protect.Set
	kind score.Kind
	// order ranks the nodes by label: the ledger takes influencer labels
	// sorted, and sorting ids by rank is much cheaper than sorting hundreds
	// of label strings per release. It depends on the graph only, so
	// Recommenders on one graph may share it (WithLabelOrder).
	order *LabelOrder
}

// LabelOrder is the bytewise order of one graph's node labels (the order
// of graph.Graph.ByLabel, the ledger's), in the form a release with
// exposure tracking uses to record its influencers' labels sorted. It is
// built on first use, once, and is read-only afterwards: any number of
// Recommenders on the graph, in any number of goroutines, may share it
// (WithLabelOrder). Building it sorts every label of the graph (on a
// 200 k-node graph 60-190 ms on a shared 2-core machine): a
// program that builds several Recommenders for one graph (the service
// builds one for every change of users' marks) should build the order once
// and pass it to each. A Recommender given none builds its own.
type LabelOrder struct {
	g    *graph.Graph
	once sync.Once
	rank []int32 // rank[id]: id's position in label order
	// sorted[r] is the label of rank r; the labels' bytes are laid out in
	// rank order in one string, so reading a user's influencers (sorted by
	// rank) walks memory forwards instead of jumping across the heap.
	sorted []string
	tmp    sync.Pool // *[]uint32 radix-sort scratch
}

// NewLabelOrder returns the label order of g, to be built on first use.
func NewLabelOrder(g *graph.Graph) *LabelOrder { return &LabelOrder{g: g} }

// build builds the order (once; safe for concurrent callers, who all wait
// for the one build).
func (o *LabelOrder) build() {
	o.once.Do(func() {
		byLabel := o.g.ByLabel()
		o.rank = make([]int32, len(byLabel))
		ends := make([]int, len(byLabel))
		var b strings.Builder
		for r, id := range byLabel {
			o.rank[id] = int32(r)
			b.WriteString(o.g.Label(id))
			ends[r] = b.Len()
		}
		arena, start := b.String(), 0
		o.sorted = make([]string, len(byLabel))
		for r, end := range ends {
			o.sorted[r], start = arena[start:end], end
		}
	})
}

func newInfluence(g *graph.Graph, p *protect.Set, k score.Kind, order *LabelOrder) influence {
	return influence{g: g, p: p, kind: k, order: order}
}

// Everyone is the influencer entry meaning every protected party.
const Everyone = "*"

// ids returns the influencing nodes of u in increasing order (nil, true for
// "everyone").
func (in influence) ids(u int32) (out []int32, all bool) {
	out, all = in.raw(u, nil)
	if all {
		return nil, true
	}
	slices.Sort(out)
	return slices.Compact(out), false
}

// raw appends the influencing nodes of u to out, unsorted and possibly
// repeated (nil, true for "everyone").
func (in influence) raw(u int32, out []int32) (_ []int32, all bool) {
	g, p := in.g, in.p
	add := func(w int32) { out = append(out, w) }
	hasOther := func(w int32) bool {
		c := p.Count(w)
		return c > 1 || (c == 1 && p.Of(w)[0] != u)
	}
	switch in.kind {
	case score.CN, score.AA, score.RA:
		for _, z := range g.Neighbors(u) {
			if hasOther(z) {
				add(z) // w = z in N(u)
			}
			for _, w := range p.Of(z) {
				if w != u {
					add(w) // x = z in N(u), w its protected partner
				}
			}
		}
	case score.JC:
		reach := map[int32]bool{}
		for _, z := range g.Neighbors(u) {
			reach[z] = true
			for _, y := range g.Neighbors(z) {
				reach[y] = true
			}
			for _, y := range p.Of(z) {
				reach[y] = true
			}
		}
		delete(reach, u)
		for y := range reach {
			if hasOther(y) {
				add(y)
			}
			for _, w := range p.Of(y) {
				if w != u {
					add(w)
				}
			}
		}
	default:
		return nil, true
	}
	return out, false
}

// of returns the labels of u's influencers in increasing (bytewise) order,
// or ["*"].
func (in influence) of(u int32) []string {
	o := in.order
	o.build()
	ids, all := in.raw(u, nil)
	if all {
		return []string{Everyone}
	}
	ranks := make([]uint32, len(ids))
	for i, w := range ids {
		ranks[i] = uint32(o.rank[w])
	}
	tmp, _ := o.tmp.Get().(*[]uint32)
	if tmp == nil {
		tmp = new([]uint32)
	}
	ranks = radixSort(ranks, tmp)
	o.tmp.Put(tmp)
	ranks = slices.Compact(ranks)
	out := make([]string, len(ranks))
	for i, r := range ranks {
		out[i] = o.sorted[r]
	}
	return out
}

// radixSort sorts a in increasing order by least-significant-digit radix
// sort, one pass per byte up to the largest value's highest byte, using
// *tmp as scratch; it returns the sorted slice (a or the scratch). A user's
// few hundred influencer ranks sort several times faster this way than by
// comparisons.
func radixSort(a []uint32, tmp *[]uint32) []uint32 {
	if len(a) < 64 {
		slices.Sort(a)
		return a
	}
	var top uint32
	for _, x := range a {
		top |= x
	}
	if cap(*tmp) < len(a) {
		*tmp = make([]uint32, len(a))
	}
	src, dst := a, (*tmp)[:len(a)]
	for shift := uint(0); shift < 32 && top>>shift != 0; shift += 8 {
		var count [256]int
		for _, x := range src {
			count[byte(x>>shift)]++
		}
		sum := 0
		for d := range count {
			count[d], sum = sum, sum+count[d]
		}
		for _, x := range src {
			d := byte(x >> shift)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return a
}
