package exact

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/mech"
)

func reader(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// allLists enumerates every ordered list of k distinct indices of [0, n).
func allLists(n, k int) [][]int {
	var out [][]int
	var rec func(cur []int)
	rec = func(cur []int) {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := 0; i < n; i++ {
			if !slices.Contains(cur, i) {
				rec(append(cur, i))
			}
		}
	}
	rec(nil)
	return out
}

// refProb is an independent rational reference: grid values floor(q/g)
// computed with big.Rat from the exact float values, weights b^(nmax-n)
// as big.Rat, every list's probability as a product of ratios.
func refProb(t *testing.T, s *Sampler, u *mech.Utilities, list []int) *big.Rat {
	t.Helper()
	vals := u.Materialize(nil)
	if s.zero {
		used := make([]bool, len(vals))
		p := big.NewRat(1, 1)
		for _, l := range list {
			mx := math.Inf(-1)
			for i, v := range vals {
				if !used[i] && v > mx {
					mx = v
				}
			}
			c := 0
			for i, v := range vals {
				if !used[i] && v == mx {
					c++
				}
			}
			if vals[l] != mx {
				return new(big.Rat)
			}
			p.Mul(p, big.NewRat(1, int64(c)))
			used[l] = true
		}
		return p
	}
	g := new(big.Rat).SetFloat64(s.GridStep())
	n := make([]*big.Int, len(vals))
	var mx *big.Int
	for i, v := range vals {
		q := new(big.Rat).SetFloat64(v)
		q.Quo(q, g)
		f := new(big.Int).Div(q.Num(), q.Denom()) // Euclidean: floor for positive denominators
		n[i] = f
		if mx == nil || f.Cmp(mx) > 0 {
			mx = f
		}
	}
	b := s.Base()
	w := make([]*big.Rat, len(vals))
	for i := range vals {
		d := new(big.Int).Sub(mx, n[i])
		w[i] = new(big.Rat).SetFrac(new(big.Int).Exp(b.Num(), d, nil), new(big.Int).Exp(b.Denom(), d, nil))
	}
	// Common denominator b.Denom()^dmax: integer weights, one normalisation.
	var dmax int64
	for i := range vals {
		dmax = max(dmax, new(big.Int).Sub(mx, n[i]).Int64())
	}
	scale := new(big.Int).Exp(b.Denom(), big.NewInt(dmax), nil)
	iw := make([]*big.Int, len(vals))
	for i := range vals {
		x := new(big.Rat).Mul(w[i], new(big.Rat).SetInt(scale))
		if !x.IsInt() {
			t.Fatal("weight not an integer after scaling")
		}
		iw[i] = x.Num()
	}
	used := make([]bool, len(vals))
	num, den := big.NewInt(1), big.NewInt(1)
	for _, l := range list {
		tot := new(big.Int)
		for i := range vals {
			if !used[i] {
				tot.Add(tot, iw[i])
			}
		}
		num.Mul(num, iw[l])
		den.Mul(den, tot)
		used[l] = true
	}
	return new(big.Rat).SetFrac(num, den)
}

type probCase struct {
	name       string
	eps, delta float64
	opts       *Options
	u          *mech.Utilities
}

func probCases() []probCase {
	return []probCase{
		{"basic", 1, 1, nil, &mech.Utilities{Vals: []float64{0, 0.5, 1.3}, Blocks: []mech.Block{{Val: 0.2, Size: 2}}}},
		{"negative-and-ties", 0.7, 0.3, nil, &mech.Utilities{Vals: []float64{-0.31, -0.3, 0.05, 0.05}, Blocks: []mech.Block{{Val: -1, Size: 1}, {Val: 0.05, Size: 0}}}},
		{"coarse-grid", 2, 1, &Options{GridBits: -1}, &mech.Utilities{Vals: []float64{0, 1, 2, 2.5, 7}}},
		{"large-eps-small-base", 40, 1, &Options{GridBits: 2}, &mech.Utilities{Vals: []float64{0, 0.25, 0.5}, Blocks: []mech.Block{{Val: 0, Size: 3}}}},
		{"wide-range", 3, 0.01, &Options{GridBits: 1}, &mech.Utilities{Vals: []float64{0, 0.02, 0.2, 1}, Blocks: []mech.Block{{Val: 0.03, Size: 2}}}},
		{"delta-zero", 1, 0, nil, &mech.Utilities{Vals: []float64{1, 3, 3, 0}, Blocks: []mech.Block{{Val: 3, Size: 2}}}},
	}
}

func TestListProbMatchesReference(t *testing.T) {
	for _, c := range probCases() {
		s, err := New(c.eps, c.delta, c.opts)
		if err != nil {
			t.Fatal(c.name, err)
		}
		n := c.u.Len()
		for k := 1; k <= min(3, n); k++ {
			sum := new(big.Rat)
			for _, l := range allLists(n, k) {
				p, err := s.ListProb(c.u, l)
				if err != nil {
					t.Fatal(err)
				}
				if ref := refProb(t, s, c.u, l); p.Cmp(ref) != 0 {
					t.Fatalf("%s k=%d list %v: ListProb %v, reference %v", c.name, k, l, p.FloatString(12), ref.FloatString(12))
				}
				sum.Add(sum, p)
			}
			if sum.Cmp(big.NewRat(1, 1)) != 0 {
				t.Fatalf("%s k=%d: probabilities sum to %v", c.name, k, sum.FloatString(20))
			}
		}
	}
}

func TestListLogProbs(t *testing.T) {
	for _, c := range probCases() {
		s, _ := New(c.eps, c.delta, c.opts)
		vals := c.u.Materialize(nil)
		lists := allLists(len(vals), min(3, len(vals)))
		lp, err := s.ListLogProbs(vals, lists)
		if err != nil {
			t.Fatal(err)
		}
		mu := &mech.Utilities{Vals: vals}
		for i, l := range lists {
			p, _ := s.ListProb(mu, l)
			want := logRat(p)
			if math.IsInf(want, -1) != math.IsInf(lp[i], -1) || (!math.IsInf(want, -1) && math.Abs(want-lp[i]) > 1e-12) {
				t.Fatalf("%s list %v: %v vs %v", c.name, l, lp[i], want)
			}
		}
	}
}

// listDist is the exact distribution (ListProb) of the ordered lists of
// length k = min(2, u.Len()) of u under s, each list indexed by its first
// and last pick.
func listDist(s *Sampler, u *mech.Utilities) (k int, index map[[2]int]int, exp []float64) {
	k = min(2, u.Len())
	lists := allLists(u.Len(), k)
	index = map[[2]int]int{}
	exp = make([]float64, len(lists))
	for i, l := range lists {
		index[[2]int{l[0], l[len(l)-1]}] = i
		p, _ := s.ListProb(u, l)
		exp[i], _ = p.Float64()
	}
	return k, index, exp
}

func TestChiSquare(t *testing.T) {
	for ci, c := range probCases() {
		s, _ := New(c.eps, c.delta, c.opts)
		k, index, exp := listDist(s, c.u)
		obs := make([]int, len(exp))
		r := reader(uint64(ci + 1))
		var dst []int
		const samples = 40000
		for range samples {
			var err error
			if dst, err = s.TopK(c.u, k, r, dst); err != nil {
				t.Fatal(err)
			}
			obs[index[[2]int{dst[0], dst[len(dst)-1]}]]++
		}
		stat, df, pv := mech.ChiSquare(obs, exp)
		if !(pv > 1e-4) {
			t.Fatalf("%s: chi-square %.1f df %d p %.3g\nobs %v\nexp %v", c.name, stat, df, pv, obs, exp)
		}
	}
}

// TestChiSquareBuckets exercises capped buckets and rebasing: with Dg = 1
// and L = 2 the block (200 grid units below the top) starts in the capped
// bucket, and after the two top picks the next ones are 80 units below,
// which triggers a rebase.
func TestChiSquareBuckets(t *testing.T) {
	u := &mech.Utilities{Vals: []float64{200, 199, 120, 119}, Blocks: []mech.Block{{Val: 0, Size: 50}}}
	s, err := New(1, 1, &Options{GridBits: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.l != 2 || s.s != 1 {
		t.Fatalf("l %d s %d", s.l, s.s)
	}
	lists := allLists(4, 3)
	exp := make([]float64, len(lists)+1)
	index := map[[3]int]int{}
	tot := 0.0
	for i, l := range lists {
		index[[3]int(l)] = i
		p, err := s.ListProb(u, l)
		if err != nil {
			t.Fatal(err)
		}
		exp[i], _ = p.Float64()
		tot += exp[i]
	}
	exp[len(lists)] = max(0, 1-tot)
	obs := make([]int, len(exp))
	r := reader(9)
	var dst []int
	blockCount := make([]int, 50)
	for range 20000 {
		dst, err = s.TopK(u, 6, r, dst)
		if err != nil {
			t.Fatal(err)
		}
		if i, ok := index[[3]int(dst[:3])]; ok {
			obs[i]++
		} else {
			obs[len(lists)]++
		}
		if dst[4] == dst[5] {
			t.Fatal("repeated pick")
		}
		for _, p := range dst[4:] {
			if p < 4 || p >= 54 {
				t.Fatalf("bad pick %d", p)
			}
			blockCount[p-4]++
		}
	}
	if _, _, pv := mech.ChiSquare(obs, exp); !(pv > 1e-4) {
		t.Fatalf("p %v obs %v exp %v", pv, obs, exp)
	}
	uni := make([]float64, 50)
	for i := range uni {
		uni[i] = 1
	}
	if _, _, pv := mech.ChiSquare(blockCount, uni); !(pv > 1e-4) {
		t.Fatalf("block members not uniform: p %v", pv)
	}
}

// TestAcceptCapped checks the factored acceptance probability of a capped
// bucket, b^(d1) 2^(s*jc) (b^L)^m, against the exact value.
func TestAcceptCapped(t *testing.T) {
	s, _ := New(1, 1, &Options{GridBits: -1}) // b = e^-1/2 roughly, L = 2, s = 1
	b, _ := s.Base().Float64()
	for _, c := range []struct {
		d     int64
		j, jc int
	}{{9, 2, 2}, {5, 2, 2}, {4, 2, 2}, {3, 1, 3}, {1, 0, 1}} {
		p := math.Pow(b, float64(c.d)) * math.Ldexp(1, int(s.s)*c.j)
		rs := &src{}
		rs.reset(reader(uint64(c.d)))
		const n = 200000
		hits := 0
		for range n {
			if s.accept(rs, c.d, c.j, c.jc) {
				hits++
			}
		}
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(hits) / n; math.Abs(got-p) > 5*sd+1e-9 {
			t.Fatalf("d %d j %d: frequency %v, want %v", c.d, c.j, got, p)
		}
	}
}

func TestDistinctAndComplete(t *testing.T) {
	u := &mech.Utilities{Vals: []float64{3, 1, 2}, Blocks: []mech.Block{{Val: 2, Size: 4}, {Val: 0, Size: 0}, {Val: 5, Size: 3}}}
	for _, delta := range []float64{0, 0.5, 30} {
		s, _ := New(0.5, delta, nil)
		r := reader(3)
		for range 200 {
			got, err := s.TopK(u, 100, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != u.Len() {
				t.Fatalf("len %d", len(got))
			}
			sorted := slices.Sorted(slices.Values(got))
			for i, v := range sorted {
				if v != i {
					t.Fatalf("delta %v: picks %v not a permutation", delta, got)
				}
			}
		}
	}
}

func TestPrivacyNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		eps := []float64{0.1, 0.5, 1, 3}[trial%4]
		delta := []float64{1, 0.37, 2.5, 1e-3}[trial/4%4]
		gb := []int{-1, 1, 2, 6}[trial/16%4]
		s, err := New(eps, delta, &Options{GridBits: gb})
		if err != nil {
			t.Fatal(err)
		}
		n := 3 + rng.IntN(2)
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(5)) * delta / 2
			switch rng.IntN(4) {
			case 0:
				b[i] = a[i] + delta // extreme move, exactly Delta
			case 1:
				b[i] = a[i] - delta
			case 2:
				b[i] = a[i] + (rng.Float64()*2-1)*delta
			default:
				b[i] = a[i]
			}
			if math.Abs(b[i]-a[i]) > delta {
				b[i] = a[i]
			}
		}
		ua, ub := &mech.Utilities{Vals: a}, &mech.Utilities{Vals: b}
		for k := 1; k <= 3; k++ {
			// Exact bound: P/P' <= (1/b)^(2*Dg*k).
			e := big.NewInt(2 * s.GridDelta() * int64(k))
			pow := new(big.Rat).SetFrac(new(big.Int).Exp(s.Base().Denom(), e, nil), new(big.Int).Exp(s.Base().Num(), e, nil))
			for _, l := range allLists(n, k) {
				p, _ := s.ListProb(ua, l)
				q, _ := s.ListProb(ub, l)
				for _, pr := range [][2]*big.Rat{{p, q}, {q, p}} {
					ratio := new(big.Rat).Quo(pr[0], pr[1])
					if ratio.Cmp(pow) > 0 {
						t.Fatalf("eps %v delta %v k %d list %v: ratio %v above (1/b)^(2 Dg k)", eps, delta, k, l, ratio.FloatString(6))
					}
					if lr := logRat(ratio); lr > float64(k)*s.EpsPerPick()+1e-12 {
						t.Fatalf("ln ratio %v > k*eps %v", lr, float64(k)*s.EpsPerPick())
					}
				}
			}
		}
	}
}

func TestEpsPerPick(t *testing.T) {
	for _, eps := range []float64{1e-4, 0.01, 0.1, 0.5, 1, 2, 10, 100, 1e4} {
		for _, delta := range []float64{1, 8.66, 0.0123, 1e6} {
			for _, gb := range []int{0, -1, 3, 12} {
				s, err := New(eps, delta, &Options{GridBits: gb})
				if err != nil {
					t.Fatalf("eps %v delta %v: %v", eps, delta, err)
				}
				ep := s.EpsPerPick()
				if ep > eps {
					t.Fatalf("eps %v: per pick %v", eps, ep)
				}
				if eps/(2*float64(s.GridDelta())) <= 40 && ep < eps*(1-1e-6) { // beyond t = 44 the base saturates at 2^-64
					t.Fatalf("eps %v delta %v gb %d: per pick %v is loose", eps, delta, gb, ep)
				}
				// Independent float check of 2*Dg*ln(1/b) <= EpsPerPick.
				z, _ := new(big.Rat).Sub(big.NewRat(1, 1), s.Base()).Float64()
				lnb := -math.Log1p(-z)
				if z > 0.5 {
					bf, _ := s.Base().Float64()
					lnb = -math.Log(bf)
				}
				if 2*float64(s.GridDelta())*lnb > ep*(1+1e-12) {
					t.Fatalf("eps %v: 2 Dg ln(1/b) = %v > %v", eps, 2*float64(s.GridDelta())*lnb, ep)
				}
				// Grid: Dg*g <= delta*(1 + 2^-k) and Dg*g >= delta.
				k := DefaultGridBits
				if gb != 0 {
					k = max(gb, 0)
				}
				dgg := float64(s.GridDelta()) * s.GridStep()
				if dgg < delta || dgg > delta*(1+math.Ldexp(1, -k)) {
					t.Fatalf("delta %v k %d: Dg*g = %v", delta, k, dgg)
				}
				// Buckets: b^l <= 2^-s.
				if hi := powBound(s.bq, s.l); !hi.lo.addSat(u128{0, hi.err}).lessEq(one.shr(s.s)) {
					t.Fatalf("bucket width wrong")
				}
			}
		}
	}
	if _, err := New(0, 1, nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("eps 0 accepted")
	}
	if _, err := New(1, math.NaN(), nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("NaN delta accepted")
	}
	if _, err := New(1e-300, 1, nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("tiny eps accepted")
	}
}

func TestToGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 5e-324, -5e-324, 1e-310, -1e-310, 123.456, -123.456, 1e15, -1e15}
	for range 2000 {
		vals = append(vals, (rng.Float64()*2-1)*math.Ldexp(1, rng.IntN(80)-40))
	}
	for _, e := range []int{-60, -10, -3, 0, 2, 20, 1000} {
		g := new(big.Rat).SetFloat64(math.Ldexp(1, e))
		if e == 1000 {
			g = new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 1000))
		}
		for _, v := range vals {
			n, ok := toGrid(v, e)
			q := new(big.Rat).Quo(new(big.Rat).SetFloat64(v), g)
			f := new(big.Int).Div(q.Num(), q.Denom())
			if !f.IsInt64() || f.Int64() >= maxGrid || f.Int64() <= -maxGrid {
				if ok && f.Int64() != n {
					t.Fatalf("%v e %d: ok with %d, want %v", v, e, n, f)
				}
				continue
			}
			if !ok || n != f.Int64() {
				t.Fatalf("toGrid(%v, %d) = %d %v, want %v", v, e, n, ok, f)
			}
		}
	}
}

// recorder remembers the bytes it hands out.
type recorder struct {
	r   *rand.ChaCha8
	got bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.got.Write(p[:n])
	return n, err
}

// TestBernPowSlow checks the slow path against the exact rational p: for
// many first words v inside or near the enclosure, the decision must agree
// with the uniform number formed by the words actually consumed.
func TestBernPowSlow(t *testing.T) {
	s, _ := New(0.3, 1, nil)
	for _, d := range []int64{1, 7, 300, s.l, 3*s.l + 5} {
		t2 := uint(0)
		if d >= s.l {
			t2 = uint(d / s.l)
		}
		p := new(big.Rat).SetFrac(new(big.Int).Exp(s.Base().Num(), big.NewInt(d), nil), new(big.Int).Exp(s.Base().Denom(), big.NewInt(d), nil))
		p.Mul(p, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), t2)))
		f := new(big.Int).Div(new(big.Int).Lsh(p.Num(), 64), p.Denom()).Uint64() // floor(p 2^64)
		for _, v := range []uint64{f - 1, f, f + 1} {
			rec := &recorder{r: reader(uint64(d))}
			rs := &src{}
			rs.reset(rec)
			got := s.bernPowSlow(rs, v, d, t2)
			// Words consumed: v then the ones read from rec (in order).
			words := []uint64{v}
			b := rec.got.Bytes()
			for i := 0; i+8 <= rs.pos; i += 8 {
				var w uint64
				for j := 7; j >= 0; j-- {
					w = w<<8 | uint64(b[i+j])
				}
				words = append(words, w)
			}
			ui := new(big.Int)
			for _, w := range words {
				ui.Lsh(ui, 64).Or(ui, new(big.Int).SetUint64(w))
			}
			den := new(big.Int).Lsh(big.NewInt(1), uint(64*len(words)))
			ulo := new(big.Rat).SetFrac(ui, den)
			uhi := new(big.Rat).SetFrac(new(big.Int).Add(ui, big.NewInt(1)), den)
			if got && uhi.Cmp(p) > 0 || !got && ulo.Cmp(p) < 0 {
				t.Fatalf("d %d v %x: decision %v inconsistent with U in [%v, %v), p %v", d, v, got, ulo.FloatString(25), uhi.FloatString(25), p.FloatString(25))
			}
		}
	}
}

type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("entropy exhausted")
	}
	f.n--
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}

func TestReaderError(t *testing.T) {
	u := &mech.Utilities{Vals: make([]float64, 300), Blocks: []mech.Block{{Val: 1, Size: 5000}}}
	for i := range u.Vals {
		u.Vals[i] = float64(i) / 10
	}
	for _, delta := range []float64{0, 1} {
		s, _ := New(1, delta, nil)
		if _, err := s.TopK(u, 200, &failing{n: 1}, nil); err == nil || err.Error() != "entropy exhausted" {
			t.Fatalf("delta %v: err %v", delta, err)
		}
	}
}

func TestValidation(t *testing.T) {
	s, _ := New(1, 1, nil)
	r := reader(1)
	if _, err := s.TopK(&mech.Utilities{Vals: []float64{1}}, 0, r, nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("k = 0 accepted")
	}
	if _, err := s.TopK(&mech.Utilities{Vals: []float64{math.NaN()}}, 1, r, nil); err == nil {
		t.Fatal("NaN accepted")
	}
	if _, err := s.TopK(&mech.Utilities{Vals: []float64{1}}, 1, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("nil reader accepted")
	}
	if got, err := s.TopK(&mech.Utilities{}, 3, r, nil); err != nil || len(got) != 0 {
		t.Fatal("empty utilities")
	}
	if _, err := s.TopK(&mech.Utilities{Vals: []float64{1e300}}, 1, r, nil); !errors.Is(err, ErrInvalid) {
		t.Fatal("utility beyond the grid accepted")
	}
	if _, err := s.ListProb(&mech.Utilities{Vals: []float64{1, 2}}, []int{0, 0}); err == nil {
		t.Fatal("repeated list accepted")
	}
}

// TestQuo: the reciprocal quotient equals d / l for bucket widths from 1 to
// 2^40 (the range New allows) and distances at, around and between
// multiples of l, up to 2^63-1.
func TestQuo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ls := []int64{1, 2, 3, 5, 7, 10, 64, 1000, 1023, 1 << 20, 1<<20 + 1, 1<<40 - 1, 1 << 40}
	for range 40 {
		ls = append(ls, 2+r.Int64N(1<<40))
	}
	for _, l := range ls {
		s := &Sampler{l: l}
		if l >= 2 {
			s.linv = ^uint64(0) / uint64(l)
		}
		ds := []int64{0, 1, l - 1, l, l + 1, 1<<62 - 1, 1 << 62, 1<<63 - 1}
		for range 2000 {
			q := r.Int64N((1<<63 - 1) / l)
			ds = append(ds, q*l-1, q*l, q*l+l-1, r.Int64N(1<<63-1), r.Int64N(64*l))
		}
		for _, d := range ds {
			if d < 0 {
				continue
			}
			if got, want := s.quo(d), d/l; got != want {
				t.Fatalf("l=%d d=%d: quo %d, d/l %d", l, d, got, want)
			}
		}
	}
}

// TestValidationMatchesValidate: TopK checks individual values while it
// puts them on the grid; its errors are still Validate's, in Validate's
// order (an invalid value before an invalid block), on both paths.
func TestValidationMatchesValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []*mech.Utilities{
		nil,
		{Vals: []float64{1, nan}},
		{Vals: []float64{-inf, 2}},
		{Vals: []float64{1}, Blocks: []mech.Block{{Val: inf, Size: 2}}},
		{Vals: []float64{1}, Blocks: []mech.Block{{Val: 0, Size: -1}}},
		{Vals: []float64{nan}, Blocks: []mech.Block{{Val: 0, Size: -1}}},
		{Vals: []float64{1e300, nan}},
		{Vals: []float64{1}, Blocks: []mech.Block{{Val: 1, Size: math.MaxInt32}}},
	}
	for _, delta := range []float64{0, 1} {
		s, err := New(1, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range cases {
			want := u.Validate()
			if want == nil {
				t.Fatalf("case %d: Validate accepts it", i)
			}
			_, got := s.TopK(u, 2, reader(1), nil)
			if got == nil || got.Error() != want.Error() {
				t.Errorf("delta %v case %d: TopK error %v, Validate %v", delta, i, got, want)
			}
		}
	}
}

// TestBuildOneBucket: when every individual is within one bucket width of
// the maximum, build skips the counting sort; the buckets it leaves (order
// within them included, which decides the draws) are the counting sort's,
// and the distances (mx - gv) are measured from the same maximum.
func TestBuildOneBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, eps := range []float64{0.05, 0.5, 3} {
		s, err := New(eps, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		for round := range 300 {
			n := 1 + r.IntN(200)
			spread := s.l // half the rounds within one bucket width, half beyond
			if round%2 == 1 {
				spread = 1 + 3*s.l
			}
			base := r.Int64N(1<<40) - 1<<39
			gv := make([]int64, n)
			act := make([]int32, 0, n)
			mx, mn := int64(-maxGrid), int64(maxGrid)
			for i := range gv {
				gv[i] = base + r.Int64N(spread)
				if r.IntN(4) > 0 {
					act = append(act, int32(i))
					mx, mn = max(mx, gv[i]), min(mn, gv[i])
				}
			}
			if r.IntN(3) == 0 { // a block above every individual
				mx += r.Int64N(2 * s.l)
			}
			mk := func() *workspace {
				w := &workspace{gv: gv, jc: (62 - 8) / int(s.s)}
				w.jc = min(w.jc, maxBuckets-1)
				return w
			}
			got, want := mk(), mk()
			s.build(got, act, mx, mn)
			// want: the counting sort on its own
			s.build(want, nil, mx, mn) // sizes the arrays, resets counts
			capAt := int64(1<<63 - 1)
			if s.l <= capAt/int64(max(want.jc, 1)) {
				capAt = int64(want.jc) * s.l
			}
			s.bucketIndividuals(want, act, mx, capAt)
			if mx-mn < s.l {
				hits++
			}
			for j := 0; j <= got.jc; j++ {
				if got.icnt[j] != want.icnt[j] || got.off[j] != want.off[j] || got.cnt[j] != want.cnt[j] {
					t.Fatalf("eps %v round %d bucket %d: icnt/off/cnt %d/%d/%d, counting sort %d/%d/%d",
						eps, round, j, got.icnt[j], got.off[j], got.cnt[j], want.icnt[j], want.off[j], want.cnt[j])
				}
			}
			if !slices.Equal(got.idx[:len(act)], want.idx[:len(act)]) {
				t.Fatalf("eps %v round %d: buckets %v, counting sort %v", eps, round, got.idx[:len(act)], want.idx[:len(act)])
			}
			if got.mx != mx {
				t.Fatalf("eps %v round %d: reference maximum %d, want %d", eps, round, got.mx, mx)
			}
		}
		if hits < 50 || hits > 250 {
			t.Fatalf("eps %v: %d of 300 rounds took the one-bucket path; the test does not exercise both", eps, hits)
		}
	}
}

// TestGridAllMatchesToGrid: gridAll's inline conversion gives toGrid's
// value for every utility (both signs, normal and subnormal, near powers of
// two, small and large exponents), and its maximum and minimum.
func TestGridAllMatchesToGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var vals []float64
	for _, v := range []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 1e-310, -1e-310, 1, -1, 0.5, -0.5, 3, -3} {
		vals = append(vals, v, math.Nextafter(v, 10), math.Nextafter(v, -10))
	}
	for range 5000 {
		v := math.Ldexp(r.Float64()+0.5, r.IntN(160)-80)
		if r.IntN(2) == 0 {
			v = -v
		}
		vals = append(vals, v)
	}
	for _, e := range []int{-1074, -200, -60, -30, -10, -3, 0, 2, 20, 40} {
		s := &Sampler{e: e}
		var in []float64
		for _, v := range vals {
			if n, ok := toGrid(v, e); ok && n > -maxGrid && n < maxGrid {
				in = append(in, v)
			}
		}
		w := &workspace{}
		mx, mn, err := s.gridAll(w, &mech.Utilities{Vals: in})
		if err != nil {
			t.Fatal(err)
		}
		wmx, wmn := int64(-maxGrid), int64(maxGrid)
		for i, v := range in {
			want, _ := toGrid(v, e)
			if w.gv[i] != want {
				t.Fatalf("e %d: gridAll(%v) = %d, toGrid %d", e, v, w.gv[i], want)
			}
			wmx, wmn = max(wmx, want), min(wmn, want)
		}
		if mx != wmx || mn != wmn {
			t.Fatalf("e %d: max/min %d/%d, want %d/%d", e, mx, mn, wmx, wmn)
		}
	}
}
