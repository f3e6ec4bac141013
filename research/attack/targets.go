package attack

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// selectLists is the number of lists per hypothesis simulated for each
// shortlisted triad target.
const selectLists = 400

// tcand is a triad target: query u, candidate w, the secret pairs.
type tcand struct {
	u, w   int32
	m      int     // secret pairs
	c      int     // largest number of protected pairs one node has into N(u)
	margin float64 // CN units by which w crosses u's top-K boundary (both ways)
	ok     bool
}

// pairsOf lists the secret pairs {w, x}, x in N(u) ∩ prot(w) (only the
// first when onePair).
func pairsOf(g *graph.Graph, p *protect.Set, u, w int32, onePair bool) []graph.Edge {
	var out []graph.Edge
	for _, x := range p.Of(w) {
		if x != u && g.HasEdge(u, x) {
			out = append(out, graph.Edge{U: w, V: x})
			if onePair {
				break
			}
		}
	}
	return out
}

// triadCandidates finds, for every user u (with no protected edge of its
// own when noNoise), the non-neighbour w whose secret pairs move it across
// u's top-K boundary by the widest margin, measured on common neighbours
// (exact for CN, a proxy for the other scores): with s0 and s1 = s0 + m the
// CN of (u, w) without and with the pairs and t the K-th largest CN among
// u's other candidates, margin = min(s1 - t, t - s0). It uses only the
// attacker's knowledge (the graph outside the secret, and the marks).
func triadCandidates(g *graph.Graph, p *protect.Set, k int, noNoise, onePair bool) ([]tcand, error) {
	n := g.N()
	cn, err := score.New(g, p, score.CN)
	if err != nil {
		return nil, err
	}
	out := make([]tcand, n)
	err = parallel(n, func() func(int) error {
		wk := cn.NewWorker()
		var r score.Result
		cnt := make([]int32, n)
		stamp := make([]int32, n)
		var touched []int32
		top := make([]float64, 0, k+1)
		push := func(v float64) {
			if len(top) == k+1 && v <= top[k] {
				return
			}
			i, _ := slices.BinarySearchFunc(top, v, func(a, b float64) int { return cmp.Compare(b, a) })
			if len(top) == k+1 {
				top = top[:k]
			}
			top = slices.Insert(top, i, v)
		}
		return func(i int) error {
			u := int32(i)
			nb := g.Neighbors(u)
			if len(nb) == 0 {
				return nil
			}
			if noNoise {
				for _, x := range p.Of(u) {
					if g.HasEdge(u, x) {
						return nil
					}
				}
			}
			gen := u + 1
			stamp[u] = gen
			for _, x := range nb {
				stamp[x] = gen
			}
			touched = touched[:0]
			for _, x := range nb {
				for _, w := range p.Of(x) {
					if stamp[w] == gen {
						continue
					}
					if cnt[w] == 0 {
						touched = append(touched, w)
					}
					cnt[w]++
				}
			}
			defer func() {
				for _, w := range touched {
					cnt[w] = 0
				}
			}()
			if len(touched) == 0 {
				return nil
			}
			wk.Score(u, &r)
			if r.NumCandidates() <= k {
				return nil // every candidate is always listed
			}
			top = top[:0]
			for _, v := range r.S {
				push(v)
			}
			for range min(r.Zero, k+1) {
				push(0)
			}
			best := tcand{u: u}
			c := 0
			for _, w := range touched {
				c = max(c, int(cnt[w]))
			}
			for _, w := range touched {
				m, inG := 0, 0
				for _, x := range p.Of(w) {
					if stamp[x] == gen && x != u {
						m++
						if g.HasEdge(w, x) {
							inG++
						}
						if onePair {
							break
						}
					}
				}
				sG, _ := wk.At(w)
				s0 := sG - float64(inG)
				s1 := s0 + float64(m)
				t := top[k-1]
				if sG >= top[k-1] {
					t = top[k]
				}
				margin := math.Min(s1-t, t-s0)
				if !best.ok || margin > best.margin || (margin == best.margin && (m > best.m || (m == best.m && w < best.w))) {
					best = tcand{u: u, w: w, m: m, c: c, margin: margin, ok: true}
				}
			}
			out[i] = best
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	var cands []tcand
	for _, c := range out {
		if c.ok {
			cands = append(cands, c)
		}
	}
	return cands, nil
}

// shortlist takes half of the targets by margin relative to c(u) (the
// noise of the rigorous calibration grows with c(u)) and the rest by raw
// margin, each ranking fully tie-broken, without repeating a user.
func shortlist(cands []tcand, size int) []tcand {
	byRel := slices.Clone(cands)
	rel := func(c tcand) float64 { return c.margin / float64(max(1, c.c)) }
	slices.SortStableFunc(byRel, func(a, b tcand) int {
		return cmp.Or(cmp.Compare(rel(b), rel(a)), cmp.Compare(b.margin, a.margin), cmp.Compare(b.m, a.m), cmp.Compare(a.u, b.u))
	})
	byAbs := slices.Clone(cands)
	slices.SortStableFunc(byAbs, func(a, b tcand) int {
		return cmp.Or(cmp.Compare(b.margin, a.margin), cmp.Compare(b.m, a.m), cmp.Compare(a.u, b.u))
	})
	seen := map[int32]bool{}
	var out []tcand
	add := func(list []tcand, limit int) {
		for _, c := range list {
			if len(out) >= limit {
				return
			}
			if !seen[c.u] {
				seen[c.u] = true
				out = append(out, c)
			}
		}
	}
	add(byRel, (size+1)/2)
	add(byAbs, size)
	return out
}

// toggled returns g without and with the given pairs.
func toggled(g *graph.Graph, n int, base []graph.Edge, pairs []graph.Edge, labels []string) (g0, g1 *graph.Graph, err error) {
	key := func(e graph.Edge) [2]int32 {
		if e.U > e.V {
			return [2]int32{e.V, e.U}
		}
		return [2]int32{e.U, e.V}
	}
	sec := map[[2]int32]bool{}
	for _, e := range pairs {
		sec[key(e)] = true
	}
	var e0 []graph.Edge
	for _, e := range base {
		if !sec[key(e)] {
			e0 = append(e0, e)
		}
	}
	if g0, _, err = graph.FromEdges(n, e0, labels); err != nil {
		return nil, nil, err
	}
	if g1, _, err = graph.FromEdges(n, append(e0, pairs...), labels); err != nil {
		return nil, nil, err
	}
	return g0, g1, nil
}

// triadGame picks the triad (or no-noise) target: a shortlist by margin,
// then the candidate whose simulated feature distributions differ most
// (simulated with the configured mechanism, or with the exact top-K for
// the no-noise attack, so that every calibration faces the same targets).
func triadGame(g *graph.Graph, p *protect.Set, cfg *Config, m *mechanism) (*game, error) {
	noNoise := cfg.Attack == NoNoise
	cands, err := triadCandidates(g, p, cfg.K, noNoise, cfg.OnePair)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		if noNoise {
			return nil, errors.New("attack: no target: no user without protected edges of its own has a protected pair into its neighbourhood (and more than K candidates)")
		}
		return nil, errors.New("attack: no target: no user has a protected pair {w, x} with x a neighbour and w a candidate (and more than K candidates)")
	}
	short := shortlist(cands, cfg.Shortlist)
	sel := m
	if noNoise {
		sel = &mechanism{cc: &calib.Config{Method: calib.NonPrivate, Kind: cfg.Score}, scale: 1}
	}
	base := g.EdgeList()
	games := make([]*game, len(short))
	div := make([]float64, len(short))
	err = parallel(len(short), func() func(int) error {
		return func(i int) error {
			c := short[i]
			pairs := pairsOf(g, p, c.u, c.w, cfg.OnePair)
			g0, g1, err := toggled(g, g.N(), base, pairs, g.Labels())
			if err != nil {
				return err
			}
			gm, err := newGame(g0, g1, p, cfg.Score, []int32{c.u}, c.w, pairs, cfg.DPLPList)
			if err != nil {
				return err
			}
			s := newSim(gm, sel, cfg.K)
			var cnt [2][]float64
			for b := range 2 {
				cnt[b] = make([]float64, cfg.K+1)
				for l := range selectLists {
					f, err := s.feature(b, 0, randx.Derive(cfg.Seed, tagSelect, uint64(i), uint64(b), uint64(l)))
					if err != nil {
						return err
					}
					cnt[b][f]++
				}
			}
			games[i], div[i] = gm, divergence(cnt[0], cnt[1])
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	best := 0
	for i := range div {
		if div[i] > div[best] {
			best = i
		}
	}
	return games[best], nil
}

// sybilGame adds cfg.Sybils fake users, linked to each other and to a
// target a, and makes the secret the protected pair {a, c}: with it, c is
// a common-neighbour candidate of every sybil. The pair and orientation
// are chosen so that c is listed by the exact top-K whenever the pair
// exists: a's other degree d0 at most K-1 (then as large as possible, so
// that few random candidates fill the list), else as small as possible;
// ties by c's degree, then ids.
func sybilGame(g *graph.Graph, p *protect.Set, cfg *Config) (*game, error) {
	pairs := p.Pairs()
	if len(pairs) == 0 {
		return nil, errors.New("attack: no protected pair to attack")
	}
	n, k := g.N(), cfg.K
	type opt struct{ a, c int32 }
	key := func(o opt) (int, int, int) {
		d0 := g.Degree(o.a)
		if g.HasEdge(o.a, o.c) {
			d0--
		}
		if d0 <= k-1 {
			return 0, k - 1 - d0, g.Degree(o.c)
		}
		return 1, d0, g.Degree(o.c)
	}
	var best opt
	found := false
	for _, e := range pairs {
		for _, o := range []opt{{e.U, e.V}, {e.V, e.U}} {
			if !found {
				best, found = o, true
				continue
			}
			a1, a2, a3 := key(o)
			b1, b2, b3 := key(best)
			if c := cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2), cmp.Compare(a3, b3), cmp.Compare(o.a, best.a), cmp.Compare(o.c, best.c)); c < 0 {
				best = o
			}
		}
	}
	S := cfg.Sybils
	labels := make([]string, n+S)
	for i := range n {
		labels[i] = g.Label(int32(i))
	}
	used := map[string]bool{}
	for _, l := range labels[:n] {
		used[l] = true
	}
	var obs []int32
	for i := range S {
		l := fmt.Sprintf("sybil-%d", i+1)
		for used[l] {
			l += "'"
		}
		used[l] = true
		labels[n+i] = l
		obs = append(obs, int32(n+i))
	}
	base := g.EdgeList()
	for i := range S {
		y := int32(n + i)
		base = append(base, graph.Edge{U: best.a, V: y})
		for j := i + 1; j < S; j++ {
			base = append(base, graph.Edge{U: y, V: int32(n + j)})
		}
	}
	secret := []graph.Edge{{U: best.a, V: best.c}}
	g0, g1, err := toggled(g, n+S, base, secret, labels)
	if err != nil {
		return nil, err
	}
	p2, err := protect.New(n+S, pairs)
	if err != nil {
		return nil, err
	}
	return newGame(g0, g1, p2, cfg.Score, obs, best.c, secret, cfg.DPLPList)
}
