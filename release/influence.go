package release

import (
	"slices"
	"sync"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
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
	// dict names the graph's nodes to the ledger: a release records its
	// influencers as node ids into it (ledger.Release.InflIdx).
	dict *InfluenceDict
	// blocks are the CN/AA/RA influence blocks of these marks: block z is
	// {z} ∪ prot(z) (made on first use).
	blocks *blockFamily
	// classes is min(|prot(z)|, 2) of every node z (made on first use).
	classes *protClasses
}

// protClasses packs min(|prot(z)|, 2) of every node z into two bits: record
// reads it for every neighbour of every user, at random places, and 2.5 MB
// at 10 M nodes stays in the cache where the marks' 80 MB of offsets did
// not (13.5 s of CPU in a 10 M-user release).
type protClasses struct {
	once sync.Once
	bits []uint8
}

// get returns the packed classes of the n nodes of p (made on first use):
// node z's is classOf(bits, z).
func (c *protClasses) get(p *protect.Set, n int) []uint8 {
	c.once.Do(func() {
		bits := make([]uint8, (n+3)/4)
		for w := range int32(n) {
			bits[w>>2] |= uint8(min(p.Count(w), 2)) << ((w & 3) * 2)
		}
		c.bits = bits
	})
	return c.bits
}

// classOf returns min(|prot(z)|, 2) from protClasses' bits.
func classOf(bits []uint8, z int32) int { return int(bits[z>>2]>>((z&3)*2)) & 3 }

// blockFamily makes a Recommender's ledger.Blocks once.
type blockFamily struct {
	once sync.Once
	b    *ledger.Blocks
}

// InfluenceDict is one graph's node labels as the ledger's influencer
// dictionary (ledger.Dict, indexed by node id): a release with exposure
// tracking hands the ledger its influencers' node ids, and the ledger maps
// them to its label ids through an array it fills once per label, instead
// of being given, checking, sorting and looking up hundreds of label
// strings per list. It is made on first use (checking every label once) and
// is read-only afterwards: any number of Recommenders on the graph, in any
// number of goroutines, may share it (WithInfluenceDict), and a store keeps
// the ids it has learned with it. A program that builds several
// Recommenders for one graph (the service builds one for every change of
// users' marks) should make it once and pass it to each; a Recommender
// given none makes its own.
type InfluenceDict struct {
	g    *graph.Graph
	once sync.Once
	dict *ledger.Dict
}

// NewInfluenceDict returns the influencer dictionary of g, made on first
// use.
func NewInfluenceDict(g *graph.Graph) *InfluenceDict { return &InfluenceDict{g: g} }

// get makes the dictionary (once; safe for concurrent callers, who all wait
// for it).
func (d *InfluenceDict) get() *ledger.Dict {
	d.once.Do(func() {
		var err error
		if d.dict, err = ledger.NewDict(d.g.N(), d.g.Label); err != nil {
			panic(err) // unreachable: a graph has 0 to 2^31 nodes and a label function
		}
		d.dict.InLabelOrder(d.g.ByLabel)
	})
	return d.dict
}

func newInfluence(g *graph.Graph, p *protect.Set, k score.Kind, dict *InfluenceDict) influence {
	return influence{g: g, p: p, kind: k, dict: dict, blocks: new(blockFamily), classes: new(protClasses)}
}

// blockSet returns the influence blocks of the marks: block z is z and its
// protected partners (empty for a node without protected pairs).
func (in influence) blockSet() *ledger.Blocks {
	in.blocks.once.Do(func() {
		p := in.p
		var err error
		in.blocks.b, err = ledger.NewBlocks(in.dict.get(), func(z int32) []int32 {
			if p.Count(z) == 0 {
				return nil
			}
			return append([]int32{z}, p.Of(z)...)
		})
		if err != nil {
			panic(err) // unreachable: a dictionary and a members function
		}
	})
	return in.blocks.b
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

// record sets rel's influencers to u's: node ids into the graph's
// dictionary (unsorted, possibly repeated: the ledger sorts them once mapped
// to its ids), or ["*"].
//
// For CN, AA and RA the set is given as blocks (ledger.Blocks): the union
// of the blocks {z} ∪ prot(z) of u's neighbours z with protected pairs,
// minus the exclusions X = {z in N(u): prot(z) = {u}}, and u itself when it
// is in some prot(z). That is exactly raw's set: raw adds z when prot(z)
// has a member other than u, and every w != u of every prot(z); a z with
// prot(z) = {u} is nobody's protected partner but u's, so no other block
// brings it back, and u is never in raw's set (TestBlocksMatchRaw).
func (in influence) record(rel *ledger.Release, u int32) {
	if in.kind == score.CN || in.kind == score.AA || in.kind == score.RA {
		p := in.p
		nb, pu := in.g.Neighbors(u), p.Of(u) // both sorted
		zs := make([]int32, 0, len(nb))
		var excl []int32
		uIn := false
		j := 0
		cls := in.classes.get(p, in.g.N())
		for _, z := range nb {
			c := classOf(cls, z) // |prot(z)|, or 2 for more
			if c == 0 {
				continue
			}
			zs = append(zs, z)
			// u in prot(z) iff z in prot(u): a merge with prot(u)
			// instead of a search of each (hub-sized) prot(z).
			for j < len(pu) && pu[j] < z {
				j++
			}
			if j < len(pu) && pu[j] == z {
				uIn = true
				if c == 1 {
					excl = append(excl, z)
				}
			}
		}
		if uIn {
			excl = append(excl, u)
		}
		if len(zs) == 0 || (uIn && len(excl) == len(zs)+1) {
			return // every block is {z, u}, all excluded: no influencer
		}
		rel.InflBlocks, rel.InflIdx, rel.InflExcl = in.blockSet(), zs, excl
		return
	}
	ids, all := in.raw(u, nil)
	if all {
		rel.Influencers = []string{Everyone}
		return
	}
	if len(ids) > 0 {
		rel.InflDict, rel.InflIdx = in.dict.get(), ids
	}
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
