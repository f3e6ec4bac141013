package exact

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/mech"
)

// sliceLazy serves a slice's values on demand and counts the calls.
type sliceLazy struct {
	vals  []float64
	calls int
}

func (l *sliceLazy) Len() int { return len(l.vals) }
func (l *sliceLazy) At(i int) float64 {
	l.calls++
	return l.vals[i]
}

// lazyCases are utilities whose individuals lie within one bucket width
// (the lazy path) at their bounds.
func lazyCases() []probCase {
	// One bucket's width apart, weights differ by up to 2^s: a sampler
	// that ignored the values would fail the chi-square test here.
	s, _ := New(1, 1, nil)
	w := float64(s.l) * s.GridStep()
	return []probCase{
		{"spread-over-a-bucket", 1, 1, nil, &mech.Utilities{Vals: []float64{0, 0.45 * w, 0.9 * w, 0.6 * w}, Blocks: []mech.Block{{Val: 0.2 * w, Size: 2}}}},
		{"close-values-and-block", 0.1, 1, nil, &mech.Utilities{Vals: []float64{0.30, 0.31, 0.33, 0.35}, Blocks: []mech.Block{{Val: 0.2, Size: 3}}}},
		{"block-above", 0.2, 1, nil, &mech.Utilities{Vals: []float64{-0.1, 0, 0.05}, Blocks: []mech.Block{{Val: 0.4, Size: 2}, {Val: -3, Size: 1}}}},
		{"ties-negative", 0.05, 0.5, nil, &mech.Utilities{Vals: []float64{-1, -1, -0.99, -1.02, -1}}},
	}
}

func bounds(vals []float64) (lo, hi float64) {
	return slices.Min(vals), slices.Max(vals)
}

// TestTopKLazyChiSquare: the lazy path's lists follow ListProb, with
// tight bounds and with hi above the largest value (a loose upper bound
// is allowed: only efficiency depends on it).
func TestTopKLazyChiSquare(t *testing.T) {
	for ci, c := range lazyCases() {
		s, err := New(c.eps, c.delta, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := bounds(c.u.Vals)
		pads := []float64{0}
		if c.name != "spread-over-a-bucket" {
			pads = append(pads, s.GridStep()*float64(s.l)/2)
		}
		for pi, pad := range pads {
			w := new(workspace)
			if _, fits, err := s.lazyBounds(w, lo-pad, hi+pad/2, c.u.Blocks); err != nil || !fits {
				t.Fatalf("%s pad %v: not the lazy path (fits %v, err %v)", c.name, pad, fits, err)
			}
			k, index, exp := listDist(s, c.u)
			obs := make([]int, len(exp))
			r := reader(uint64(100 + 10*ci + pi))
			lv := &sliceLazy{vals: c.u.Vals}
			var dst []int
			for range 40000 {
				if dst, err = s.TopKLazy(lv, lo-pad, hi+pad/2, c.u.Blocks, k, r, dst); err != nil {
					t.Fatal(err)
				}
				obs[index[[2]int{dst[0], dst[len(dst)-1]}]]++
			}
			if stat, df, pv := mech.ChiSquare(obs, exp); !(pv > 1e-4) {
				t.Fatalf("%s pad %v: chi-square %.1f df %d p %.3g\nobs %v\nexp %v", c.name, pad, stat, df, pv, obs, exp)
			}
		}
	}
}

// TestTopKLazyWideMatchesTopK: bounds wider than a bucket (or Delta == 0)
// compute every value and give TopK's picks on the same stream.
func TestTopKLazyWideMatchesTopK(t *testing.T) {
	for ci, c := range probCases() {
		s, err := New(c.eps, c.delta, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := bounds(c.u.Vals)
		lo -= 1000 * float64(s.l) * max(s.GridStep(), 1)
		n := c.u.Len()
		for k := 1; k <= n; k++ {
			ra, rb := reader(uint64(ci*50+k)), reader(uint64(ci*50+k))
			for range 50 {
				want, err1 := s.TopK(c.u, k, ra, nil)
				got, err2 := s.TopKLazy(&sliceLazy{vals: c.u.Vals}, lo, hi, c.u.Blocks, k, rb, nil)
				if err1 != nil || err2 != nil || !slices.Equal(got, want) {
					t.Fatalf("%s k=%d: lazy %v (%v), TopK %v (%v)", c.name, k, got, err2, want, err1)
				}
			}
		}
	}
}

// TestTopKLazyFewValues: on the lazy path only proposed individuals are
// computed, about two per pick, not every candidate.
func TestTopKLazyFewValues(t *testing.T) {
	s, err := New(0.1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float64, 100000)
	for i := range vals {
		vals[i] = 0.5 + float64(i%97)*1e-4
	}
	lo, hi := bounds(vals)
	r := reader(7)
	lv := &sliceLazy{vals: vals}
	const lists, k = 200, 30
	for range lists {
		got, err := s.TopKLazy(lv, lo, hi, []mech.Block{{Val: 0.4, Size: 1 << 20}}, k, r, nil)
		if err != nil || len(got) != k {
			t.Fatalf("%v %v", got, err)
		}
	}
	// Each proposal of an individual computes one value; acceptance is
	// above 1/2, so far fewer than 20 per pick even with the block.
	if lv.calls > lists*k*20 {
		t.Fatalf("%d values computed for %d picks", lv.calls, lists*k)
	}
}

// TestTopKLazyBadBound is the negative control: a value above the
// caller's hi would be accepted with a probability above 1; it is an
// error instead.
func TestTopKLazyBadBound(t *testing.T) {
	s, err := New(0.1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := &sliceLazy{vals: []float64{0.9}}
	_, err = s.TopKLazy(lv, 0.1, 0.2, nil, 1, reader(1), nil)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a value above hi: err %v, want ErrInvalid", err)
	}
	for _, b := range [][2]float64{{1, 0}, {0, math.Inf(1)}, {math.NaN(), 1}} {
		if _, err := s.TopKLazy(lv, b[0], b[1], nil, 1, reader(1), nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("bounds %v: err %v, want ErrInvalid", b, err)
		}
	}
}

// leWords is a generator that is both Words and an io.Reader of its words
// in little-endian bytes (as calib.RandReader); bytesOnly hides its Words.
type leWords struct{ r *rand.ChaCha8 }

func (l leWords) Uint64() uint64 { return l.r.Uint64() }
func (l leWords) Read(b []byte) (int, error) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], l.r.Uint64())
	}
	return len(b), nil
}

type bytesOnly struct{ io.Reader }

// TestWordsMatchRead: a reader that is Words is drawn from word by word,
// the same words in the same order as through Read (a first call, before
// Read's buffer would drop its leftovers, gives the same picks).
func TestWordsMatchRead(t *testing.T) {
	for ci, c := range probCases() {
		s, err := New(c.eps, c.delta, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k <= c.u.Len(); k++ {
			for seed := range uint64(20) {
				a := leWords{reader(uint64(ci)*1000 + seed)}
				b := bytesOnly{leWords{reader(uint64(ci)*1000 + seed)}}
				if _, ok := io.Reader(b).(Words); ok {
					t.Fatal("bytesOnly is Words")
				}
				got, err1 := s.TopK(c.u, k, a, nil)
				want, err2 := s.TopK(c.u, k, b, nil)
				if err1 != nil || err2 != nil || !slices.Equal(got, want) {
					t.Fatalf("%s k=%d seed %d: words %v (%v), bytes %v (%v)", c.name, k, seed, got, err1, want, err2)
				}
			}
		}
	}
}

// TestTopKLazyAnon: TopKLazyAnon reports the t-th pick of a block as the
// block's first index plus t, on the lazy path and on the materialised one
// (wide bounds), and its lists mapped by a uniformly random injection into
// the blocks' members follow ListProb. Negative control: the same picks
// mapped as they come (the t-th pick to member t) fail, since a block's
// members are then not equally likely.
func TestTopKLazyAnon(t *testing.T) {
	for ci, c := range lazyCases() {
		if len(c.u.Blocks) == 0 {
			continue
		}
		s, err := New(c.eps, c.delta, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := bounds(c.u.Vals)
		n := len(c.u.Vals)
		for _, wide := range []bool{false, true} {
			lo := lo
			if wide {
				lo -= 1000 * float64(s.l) * max(s.GridStep(), 1)
			}
			k, index, exp := listDist(s, c.u)
			obs, raw := make([]int, len(exp)), make([]int, len(exp))
			r := reader(uint64(300 + 10*ci))
			inj := rand.New(rand.NewPCG(uint64(ci), 7))
			lv := &sliceLazy{vals: c.u.Vals}
			var dst []int
			mapped := make([]int, k)
			for range 40000 {
				if dst, err = s.TopKLazyAnon(lv, lo, hi, c.u.Blocks, k, r, dst); err != nil {
					t.Fatal(err)
				}
				// The t-th pick of each block is its first index plus t;
				// the injection takes a uniform member not taken yet.
				var taken [][]int
				seen := make([]int, len(c.u.Blocks))
				for i, p := range dst {
					mapped[i] = p
					if p < n {
						continue
					}
					b, first := 0, n
					for p >= first+c.u.Blocks[b].Size {
						first += c.u.Blocks[b].Size
						b++
					}
					if p != first+seen[b] {
						t.Fatalf("%s wide %v: pick %d of block %d reported as %d, want %d", c.name, wide, seen[b], b, p, first+seen[b])
					}
					seen[b]++
					if taken == nil {
						taken = make([][]int, len(c.u.Blocks))
					}
					for {
						m := first + inj.IntN(c.u.Blocks[b].Size)
						if !slices.Contains(taken[b], m) {
							taken[b] = append(taken[b], m)
							mapped[i] = m
							break
						}
					}
				}
				obs[index[[2]int{mapped[0], mapped[len(mapped)-1]}]]++
				raw[index[[2]int{dst[0], dst[len(dst)-1]}]]++
			}
			if stat, df, pv := mech.ChiSquare(obs, exp); !(pv > 1e-4) {
				t.Fatalf("%s wide %v: chi-square %.1f df %d p %.3g\nobs %v\nexp %v", c.name, wide, stat, df, pv, obs, exp)
			}
			if _, _, pv := mech.ChiSquare(raw, exp); pv > 1e-4 {
				t.Fatalf("%s wide %v: the anonymous picks unmapped pass the chi-square test (p %.3g): the negative control cannot fail", c.name, wide, pv)
			}
		}
	}
}
