// Package score computes the triad link-prediction scores CN, AA, RA, JC and
// PA (privacy-model §4) together with their zero-sensitivity public
// counterparts (§10), for one query u against all of u's candidates (the
// non-neighbours v != u), by wedge enumeration into dense per-worker
// accumulators, or on large graphs into a per-query hash table sized to the
// query's wedges (hashacc.go); both give bit-identical results.
//
// Scores are computed on the graph given, protected edges included. The
// public score s_pub(u, v) only reads pairs that are invariant for query u
// (pairs incident to u and non-protected pairs), so it cannot change between
// u-neighbouring graphs:
//
//   - CN_pub = |N(u) ∩ Npub(v)|, where Npub(v) are v's neighbours over
//     non-protected edges;
//   - AA_pub, RA_pub sum 1/ln d and 1/d over z in N(u) ∩ Npub(v), with
//     d = degPub_u(z) = #{x : {z,x} an edge, not protected or x == u}
//     (d >= 2 for a counted z: it has u and v);
//   - JC_pub = |N(u) ∩ Npub(v)| / |N(u) ∪ Npub(v)| (0 if the union is empty);
//   - PA_pub = deg(u) · |Npub(v)|.
package score

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/hugepage"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/protect"
)

// Kind names a triad score.
type Kind int

// The triad scores of privacy-model §4.
const (
	CN Kind = iota // common neighbours |N(u) ∩ N(v)|
	AA             // Adamic-Adar: sum over common neighbours z of 1/ln deg(z)
	RA             // resource allocation: sum over common neighbours z of 1/deg(z)
	JC             // Jaccard |N(u) ∩ N(v)| / |N(u) ∪ N(v)|, 0 if the union is empty
	PA             // preferential attachment deg(u)·deg(v)
	numKinds
)

var kindNames = [numKinds]string{"cn", "aa", "ra", "jc", "pa"}

// Kinds lists every score kind in order.
func Kinds() []Kind { return []Kind{CN, AA, RA, JC, PA} }

// ParseKind parses a score name ("cn", "aa", "ra", "jc", "pa"; any case).
func ParseKind(name string) (Kind, error) {
	l := strings.ToLower(strings.TrimSpace(name))
	for k, n := range kindNames {
		if n == l {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("score: unknown score %q (valid: %s)", name, strings.Join(kindNames[:], ", "))
}

func (k Kind) valid() bool { return k >= 0 && k < numKinds }

// String is the upper-case name, e.g. "AA".
func (k Kind) String() string {
	if k == Bounded {
		return "BOUNDED"
	}
	if !k.valid() {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return strings.ToUpper(kindNames[k])
}

// Scorer holds what every worker reads: the graph with each adjacency list
// split into non-protected and protected neighbours, per-node weights and the
// per-query sensitivities. It is immutable and safe for concurrent use.
type Scorer struct {
	g    *graph.Graph
	p    *protect.Set
	kind Kind
	n    int

	off    []int64 // = g.Off
	adj    []int32 // per node z: non-protected neighbours, then protected ones (each part ascending)
	sp     []span  // per node z: where its neighbours lie in adj (one cache line per lookup)
	deg    []int32
	pubDeg []int32
	maxDeg int32

	dw []dweight // AA/RA weights of a common neighbour by its degree

	// deltaS is every query's sensitivity (see Sensitivity): computed by
	// New, or, when perQuery, on the first call that needs the table
	// (sensTable). perQuery scorers (large graphs, AA, RA, CN) find a
	// query's DeltaS in Worker.Score instead: from the counts of its
	// table's slots when no protected pair is a non-edge (nonEdge false),
	// else by the pass for that query alone. Either way the same value.
	deltaS   []float64
	sensOnce sync.Once
	perQuery bool
	nonEdge  bool // some protected pair is not an edge of g

	// Bounded scores (NewBounded).
	name   string
	lo, hi float64
	fn     PairFunc

	pool sync.Pool // *Worker, reused by Each

	accMode accMode // dense accumulators or hash tables: by size, or forced (tests)

	// Every node by its number of protected pairs, descending (ties by
	// id), built on the first party-unit JC/PA Evidence call (maxProtOf).
	protOnce sync.Once
	protOrd  []int32
}

// New prepares a scorer for kind k on g with protection marks p (nil means
// no protected pairs). p.N() must equal g.N().
func New(g *graph.Graph, p *protect.Set, k Kind) (*Scorer, error) {
	return newScorer(g, p, k, accAuto)
}

// newScorer is New with the accumulators of the sensitivity pass and of the
// queries chosen by mode (accAuto: by size; the others for tests).
func newScorer(g *graph.Graph, p *protect.Set, k Kind, mode accMode) (*Scorer, error) {
	if g == nil {
		return nil, fmt.Errorf("score: nil graph")
	}
	if !k.valid() {
		return nil, fmt.Errorf("score: invalid kind %d", int(k))
	}
	n := g.N()
	if p == nil {
		p = protect.Empty(n)
	}
	if p.N() != n {
		return nil, fmt.Errorf("score: protection set has %d nodes, graph has %d", p.N(), n)
	}
	s := &Scorer{g: g, p: p, kind: k, n: n, off: g.Off, accMode: mode}
	s.split()
	switch k {
	case AA:
		s.dw = s.degWeights(func(d int32) float64 { return 1 / math.Log(float64(d)) })
	case RA:
		s.dw = s.degWeights(func(d int32) float64 { return 1 / float64(d) })
	}
	// On a graph whose queries may use tables, a batch scores each query
	// once and the pass over every node would cost about a quarter of the
	// scoring: the queries find their own (perQuery).
	switch k {
	case AA, RA, CN:
		s.perQuery = s.hashWanted(int64(pow2(n)) * int64(unsafe.Sizeof(accum{})))
	}
	if !s.perQuery {
		s.sensitivities()
	}
	return s, nil
}

// sensTable is deltaS, computed on the first call of a perQuery scorer.
func (s *Scorer) sensTable() []float64 {
	if s.perQuery {
		s.sensOnce.Do(s.sensitivities)
	}
	return s.deltaS
}

// deltaOf is the §4 table's deltaS (see Sensitivity) from b(u) and c(u),
// for AA, RA and CN.
func (s *Scorer) deltaOf(b, c int) float64 {
	switch s.kind {
	case CN:
		return float64(max(b, c))
	case AA:
		return float64(b+c) / math.Ln2
	default: // RA
		return float64(b+c) / 2
	}
}

// Kind is the score the scorer computes.
func (s *Scorer) Kind() Kind { return s.kind }

// Protection is the marks the scorer was built with.
func (s *Scorer) Protection() *protect.Set { return s.p }

// Graph is the scored graph.
func (s *Scorer) Graph() *graph.Graph { return s.g }

// split partitions every adjacency list into non-protected and protected
// neighbours by merging it with the sorted prot(z).
func (s *Scorer) split() {
	g, n := s.g, s.n
	s.adj = make([]int32, len(g.Adj))
	s.sp = make([]span, n)
	s.deg = make([]int32, n)
	s.pubDeg = make([]int32, n)
	hugepage.Slice(s.adj) // scoring reads the lists of random nodes z
	hugepage.Slice(s.sp)
	// Each node writes only its own list and entries: on all cores.
	parallelNodes(n, func() func(z int32) { return s.splitNode })
	poff, _ := s.p.CSR()
	for z, d := range s.deg {
		s.maxDeg = max(s.maxDeg, d)
		if poff[z+1]-poff[z] != int64(d-s.pubDeg[z]) {
			s.nonEdge = true
		}
	}
}

// splitNode is split for node z.
func (s *Scorer) splitNode(z int32) {
	g, p := s.g, s.p
	nb, pr := g.Neighbors(z), p.Of(z)
	lo := g.Off[z]
	out := s.adj[lo:g.Off[z+1]]
	np := 0
	for _, x := range nb {
		for len(pr) > 0 && pr[0] < x {
			pr = pr[1:]
		}
		if len(pr) == 0 || pr[0] != x {
			out[np] = x
			np++
		}
	}
	// Second pass for the protected part keeps both parts ascending.
	k := np
	pr = p.Of(z)
	for _, x := range nb {
		for len(pr) > 0 && pr[0] < x {
			pr = pr[1:]
		}
		if len(pr) > 0 && pr[0] == x {
			out[k] = x
			k++
		}
	}
	s.sp[z] = span{lo: lo, np: int32(np), deg: int32(len(nb))}
	s.deg[z] = int32(len(nb))
	s.pubDeg[z] = int32(np)
}

// span locates node z's neighbours in Scorer.adj: adj[lo:lo+np] are the
// neighbours over non-protected edges, adj[lo+np:lo+deg] the protected ones.
// The wedge loops read one span per neighbour z of the query, at random: 16
// bytes, so one cache line, where off and a separate pubEnd cost two or three.
type span struct {
	lo      int64
	np, deg int32
}

// dweight is the AA/RA weight of a common neighbour by its degree (see
// degWeights).
type dweight struct{ w, p float64 }

// degWeights tabulates, for every degree d in [0, maxDeg+1], f(d) as the
// weight of a common neighbour of degree d (w) and of public degree d (p);
// degrees below 2 never weigh a candidate and get a finite placeholder (1 for
// the full-graph weight, which must stay positive so a touched accumulator
// is never zero; 0 for the public one). A common neighbour z weighs
// dw[deg(z)].w and dw[pubDeg(z)].p, or dw[pubDeg(z)+1].p when the edge
// {u,z} is protected (it still counts toward degPub_u(z)): the kernel reads
// them from z's span, already loaded, instead of from an array of every node
// (a cache miss per neighbour on a large graph).
func (s *Scorer) degWeights(f func(int32) float64) []dweight {
	safe := func(d int32, low float64) float64 {
		if d < 2 {
			return low
		}
		return f(d)
	}
	dw := make([]dweight, int(s.maxDeg)+2)
	for d := range dw {
		dw[d] = dweight{w: safe(int32(d), 1), p: safe(int32(d), 0)}
	}
	return dw
}

// Sensitivity returns the invariant bounds of privacy-model §4 for query u:
// deltaS bounds |s(u,v|G) - s(u,v|G')| over u-neighbouring G, G' and every
// candidate v, and every candidate score lies in [0, sMax]. With
// b(u) = 1 if some w in N(u) has prot(w) \ {u} non-empty (else 0) and
// c(u) = max over w != u of |N(u) ∩ prot(w)|:
//
//	CN: deltaS = max(b, c),      sMax = deg(u)
//	AA: deltaS = (b + c) / ln 2, sMax = deg(u) / ln 2
//	RA: deltaS = (b + c) / 2,    sMax = deg(u) / 2
//	JC: deltaS = 1,              sMax = 1
//	PA: deltaS = deg(u)·max(1, max over w != u of |prot(w) \ {u}|), sMax = deg(u)·(|V|-1)
//
// Proof sketch. G and G' differ only in pairs {w, x}, x in T = prot(w) \ {u},
// for one w != u; N(u) is invariant. Only w and the nodes of T change
// degree: w by at most |T|, each x in T by exactly one.
//
// CN. For a candidate v != w, N(v) can gain or lose only w, and only when
// {w,v} is toggleable; that changes |N(u) ∩ N(v)| by at most one and only if
// w is in N(u) with T non-empty, so by at most b. For v = w, N(w) changes in
// T, so |N(u) ∩ N(w)| changes by at most |N(u) ∩ T| <= c.
//
// AA/RA. Every term lies in [0, 1/ln 2] (resp. [0, 1/2]) because a common
// neighbour has degree >= 2. For v != w, the term of z = w may appear,
// vanish or change degree (only if b = 1), and a term z != w changes only if
// z's degree changes, i.e. z in N(u) ∩ T, at most c terms; for v = w only
// terms z in N(u) ∩ T appear, vanish or change (the degree of any other
// z in N(w) is unchanged), at most c. Hence (b + c) times the largest term.
//
// JC lies in [0, 1]. PA: deg(u) is invariant and deg(v) moves by at most one
// for v != w and by at most |T| for v = w.
//
// Note b(u) = 1 implies c(u) >= 1 (if w in N(u) has x in prot(w) \ {u},
// then w is in N(u) ∩ prot(x) with x != u), so for CN max(b, c) = c; the
// table's form is kept.
//
// sMax: CN counts a subset of N(u); AA/RA have at most deg(u) terms, each at
// most 1/ln 2 (resp. 1/2); JC is a ratio of nested sets; deg(v) <= |V|-1.
// The same bounds hold for s_pub.
//
// A scorer of a large graph (AA, RA, CN) computes the table of every
// query's deltaS on the first call (a pass on all cores); Worker.Score
// finds the same value per query without it.
func (s *Scorer) Sensitivity(u int32) (deltaS, sMax float64) {
	return s.sensTable()[u], s.sMax(u)
}

func (s *Scorer) sMax(u int32) float64 {
	d := float64(s.deg[u])
	switch s.kind {
	case CN:
		return d
	case AA:
		return d / math.Ln2
	case RA:
		return d / 2
	case JC:
		return 1
	case Bounded:
		return s.hi - s.lo
	default: // PA
		return d * float64(s.n-1)
	}
}

// sensitivities fills deltaS for every node, in parallel.
func (s *Scorer) sensitivities() {
	n := s.n
	s.deltaS = make([]float64, n)
	switch s.kind {
	case JC:
		for u := range s.deltaS {
			s.deltaS[u] = 1
		}
		return
	case PA:
		s.paSensitivities()
		return
	}
	// A count is at most deg(u): 16-bit counters when every degree fits,
	// else 32-bit ones (deg < 2^31), to keep the memory the scatter
	// touches small.
	if s.maxDeg < 1<<16 {
		sensitivitiesWith[uint16](s)
	} else {
		sensitivitiesWith[uint32](s)
	}
}

func sensitivitiesWith[T ~uint16 | ~uint32](s *Scorer) {
	n := s.n
	parallelNodes(n, func() func(u int32) {
		cnt := make([]T, pow2(n))
		touched := make([]int32, pow2(n))
		hugepage.Slice(cnt)
		hugepage.Slice(touched)
		var tab []cslot // the sensitivity pass's hash counters (hashacc.go)
		return func(u int32) {
			var b, c int
			if size := s.bcHashSize(u, len(cnt)*int(unsafe.Sizeof(T(0)))); size > 0 {
				if len(tab) < size {
					tab = newCslots(size)
				}
				b, c = bcHash(s, u, tab[:size], touched)
			} else {
				b, c = bc(s, u, cnt, touched)
			}
			s.deltaS[u] = s.deltaOf(b, c)
		}
	})
}

// bc computes b(u) and c(u): c(u) counts, for every w, the x in N(u) with w
// in prot(x), in a dense counter (zero on entry and exit; both slices of
// power-of-two length > N, as for addCounts) whose counts may reach deg(u).
func bc[T ~uint16 | ~uint32](s *Scorer, u int32, cnt []T, touched []int32) (b, c int) {
	p := s.p
	nt := 0
	nb := s.adj[s.off[u]:s.off[u+1]]
	s.protStart(nb)
	for i, x := range nb {
		s.protAhead(nb, i)
		px := p.Of(x)
		// prot(x) \ {u} is non-empty unless prot(x) is exactly {u} or empty.
		if len(px) > 1 || (len(px) == 1 && px[0] != u) {
			b = 1
		}
		nt = addCounts(cnt, touched, px, 1, nt)
	}
	for _, w := range touched[:nt] {
		if w != u { // c(u) ranges over w != u
			c = max(c, int(cnt[w]))
		}
		cnt[w] = 0
	}
	return b, c
}

// paSensitivities: max over w != u of |prot(w) \ {u}| = max of |prot(w)| - [w in prot(u)].
// Nodes w in prot(u) are handled directly; the best w outside prot(u) ∪ {u}
// is found within the first |prot(u)|+2 entries of the nodes ordered by
// |prot(w)| descending.
func (s *Scorer) paSensitivities() {
	for u, m := range s.maxProtExcl() {
		s.deltaS[u] = float64(s.deg[u]) * float64(max(1, m))
	}
}

// parallelNodes runs f(u) for every node on GOMAXPROCS goroutines; mk makes
// one f per goroutine (so it may own scratch buffers).
func parallelNodes(n int, mk func() func(u int32)) {
	par.Run(context.Background(), n, par.Options{Chunk: 64, MinPerWorker: 256}, func(int) func(u int32) { return mk() },
		func(f func(u int32), u int) error { f(int32(u)); return nil })
}

// Pair is the brute-force reference for one pair, straight from the
// definitions with explicit set intersections and unions: it returns
// s(u, v) and s_pub(u, v) on g with protection p (nil means none). It is
// meant for tests. Pairs with u == v score 0; an invalid kind gives NaN.
func Pair(g *graph.Graph, p *protect.Set, k Kind, u, v int32) (s, pub float64) {
	if p == nil {
		p = protect.Empty(g.N())
	}
	if !k.valid() {
		return math.NaN(), math.NaN()
	}
	if u == v {
		return 0, 0
	}
	set := func(xs []int32) map[int32]bool {
		m := make(map[int32]bool, len(xs))
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	Nu := set(g.Neighbors(u))
	Nv := set(g.Neighbors(v))
	Npv := map[int32]bool{}
	for x := range Nv {
		if !p.Has(v, x) {
			Npv[x] = true
		}
	}
	inter := func(a, b map[int32]bool) []int32 {
		var out []int32
		for x := range a {
			if b[x] {
				out = append(out, x)
			}
		}
		slices.Sort(out) // fixed summation order
		return out
	}
	union := func(a, b map[int32]bool) int {
		m := map[int32]bool{}
		for x := range a {
			m[x] = true
		}
		for x := range b {
			m[x] = true
		}
		return len(m)
	}
	degPubU := func(z int32) int {
		d := 0
		for _, x := range g.Neighbors(z) {
			if !p.Has(z, x) || x == u {
				d++
			}
		}
		return d
	}
	common, commonPub := inter(Nu, Nv), inter(Nu, Npv)
	switch k {
	case CN:
		return float64(len(common)), float64(len(commonPub))
	case AA, RA:
		f := func(d int) float64 { return 1 / math.Log(float64(d)) }
		if k == RA {
			f = func(d int) float64 { return 1 / float64(d) }
		}
		for _, z := range common {
			s += f(g.Degree(z))
		}
		for _, z := range commonPub {
			pub += f(degPubU(z))
		}
		return s, pub
	case JC:
		if un := union(Nu, Nv); un > 0 {
			s = float64(len(common)) / float64(un)
		}
		if un := union(Nu, Npv); un > 0 {
			pub = float64(len(commonPub)) / float64(un)
		}
		return s, pub
	default: // PA
		return float64(len(Nu) * len(Nv)), float64(len(Nu) * len(Npv))
	}
}
