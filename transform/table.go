package transform

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// Table is the deployed form of a transform (privacy-model §5): values
// T_i = T(i/(m-1)) at m uniform points of [0, 1], non-decreasing, linear
// interpolation between them and clamping outside. Monotonicity is exact by
// construction, and the sensitivity Delta of a piecewise-linear function is
// computed exactly. Since x = s/S_max(u), the grid covers s in [0, S_max(u)].
// A Table is immutable and safe for concurrent use.
type Table struct {
	v      []float64
	margin float64 // rounding allowance added to Delta, see Delta
	mag    float64 // the largest |T_i| (the ends: T is monotone)
	// memo holds recent Delta results by dx (direct-mapped): a release
	// calls Delta once per list, and dx = Delta_s(u)/S_max(u) takes few
	// distinct values (both are counts, or counts times a constant), while
	// one evaluation costs 2m Evals. An entry is the value delta computed
	// for exactly those bits of dx, so a hit returns the same float64.
	memo *[deltaSlots]atomic.Pointer[deltaEntry]
}

// deltaSlots is the size of a Table's Delta memo.
const (
	deltaBits  = 10
	deltaSlots = 1 << deltaBits
)

type deltaEntry struct {
	dx uint64 // math.Float64bits of the argument
	d  float64
}

// Compile evaluates t at grid >= 2 uniform points of [0, 1] and enforces
// monotonicity by a running maximum (quadrature of a positive integrand is
// monotone in exact arithmetic but not always in floating point).
func Compile(t Transform, grid int) (*Table, error) {
	if t == nil {
		return nil, errors.New("transform: nil transform")
	}
	if grid < 2 || grid > 1<<24 {
		return nil, fmt.Errorf("transform: table grid %d out of range [2, 2^24]", grid)
	}
	v := make([]float64, grid)
	for i := range v {
		x := float64(i) / float64(grid-1)
		v[i] = t.Eval(x)
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			return nil, fmt.Errorf("transform: value %v at x = %v", v[i], x)
		}
		if i > 0 && v[i] < v[i-1] {
			v[i] = v[i-1]
		}
	}
	return newTable(v), nil
}

// NewTable builds a table from m >= 2 finite, non-decreasing values at the
// uniform points of [0, 1] (as stored in a model file). It copies values.
func NewTable(values []float64) (*Table, error) {
	if len(values) < 2 {
		return nil, fmt.Errorf("transform: table needs at least 2 values, got %d", len(values))
	}
	for i, x := range values {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("transform: table value %d is %v", i, x)
		}
		if i > 0 && x < values[i-1] {
			return nil, fmt.Errorf("transform: table decreases at point %d (%v < %v)", i, x, values[i-1])
		}
	}
	return newTable(slices.Clone(values)), nil
}

func newTable(v []float64) *Table {
	m := len(v)
	var maxStep float64
	for i := 1; i < m; i++ {
		maxStep = max(maxStep, v[i]-v[i-1])
	}
	mag := max(math.Abs(v[0]), math.Abs(v[m-1]))
	// Evaluations of Eval carry rounding of order eps*|T| from the
	// arithmetic and eps*(m-1)*maxStep from rounding x and x+dx (times the
	// steepest slope); a generous multiple of both keeps every
	// floating-point difference Eval(x+dx) - Eval(x) below Delta.
	const eps = 0x1p-52
	return &Table{v: v, margin: 16 * eps * (float64(m)*maxStep + mag), mag: mag, memo: new([deltaSlots]atomic.Pointer[deltaEntry])}
}

// Len returns the number of grid points.
func (t *Table) Len() int { return len(t.v) }

// Values returns a copy of the grid values.
func (t *Table) Values() []float64 { return slices.Clone(t.v) }

// Eval returns T(x): linear interpolation, clamped to [T(0), T(1)] outside
// [0, 1]; NaN for NaN.
func (t *Table) Eval(x float64) float64 {
	v := t.v
	m := len(v)
	if !(x > 0) {
		if x != x {
			return math.NaN()
		}
		return v[0]
	}
	if x >= 1 {
		return v[m-1]
	}
	return interp(v, x*float64(m-1))
}

// AppendRatios appends T(s[i]/den) to dst for every i in idx, in order: the
// values Eval(s[i]/den) gives, computed in one loop (this runs for every
// candidate of every released list). den must be > 0.
func (t *Table) AppendRatios(dst []float64, s []float64, idx []int, den float64) []float64 {
	v := t.v
	for _, j := range idx {
		var y float64
		if x := s[j] / den; x > 0 && x < 1 {
			y = interp(v, x*float64(len(v)-1)) // Eval's interior case inline
		} else {
			y = t.Eval(x)
		}
		dst = append(dst, y)
	}
	return dst
}

// Ratio is T(s/den), the value AppendRatios gives for s. den must be > 0.
func (t *Table) Ratio(s, den float64) float64 {
	if x := s / den; x > 0 && x < 1 {
		return interp(t.v, x*float64(len(t.v)-1))
	}
	return t.Eval(s / den)
}

// interp is the linear interpolation of v at pos in [0, len(v)-1]: Eval's
// arithmetic (pos - i is exact).
func interp(v []float64, pos float64) float64 {
	last := len(v) - 1
	if i := int(pos); i < last {
		return v[i] + (pos-float64(i))*(v[i+1]-v[i])
	}
	return v[last]
}

// RatioBounds returns lo and hi with lo <= Ratio(s, den) <= hi for every
// s in [sLo, sHi] (finite, den > 0): Ratio at the ends, widened by pad =
// max(2^-48 M, 2^-1000), M the largest |T_i|.
//
// Why that holds although floating-point interpolation is not exactly
// monotone: x = s/den and pos = x(m-1) are correctly rounded, hence
// non-decreasing in s, and pos - i is exact, so Ratio(s) is the exact
// interpolant y*(pos) (non-decreasing, as the T_i are) up to the rounding of
// the difference, the product and the sum: |Ratio(s) - y*(pos)| <= 6uM
// with u = 2^-53 (the clamped cases are exact). For s in [sLo, sHi] then
// Ratio(s) <= y*(pos(sHi)) + 6uM <= Ratio(sHi) + 12uM, and adding pad =
// 32uM and rounding loses at most u(M + pad), which leaves more than 12uM;
// symmetrically for lo. The 2^-1000 floor covers subnormal rounding.
// TestRatioBounds checks it on random tables and scores.
func (t *Table) RatioBounds(sLo, sHi, den float64) (lo, hi float64) {
	pad := max(t.mag*0x1p-48, 0x1p-1000)
	return t.Ratio(sLo, den) - pad, t.Ratio(sHi, den) + pad
}

// Delta returns the sensitivity of T for a change of at most dx in x:
//
//	Delta(dx) = sup over x in [0, 1] of T(min(x+dx, 1)) - T(x),
//
// with dx = Delta_s(u) / S_max(u). Special cases: Delta(0) = 0 (nothing can
// move, the mechanism releases the exact top-K), dx >= 1 gives
// T(1) - T(0), and a negative or NaN dx gives +Inf (fail-safe: infinite
// sensitivity makes the mechanism uniform).
//
// Why evaluating finitely many points is exact: let D(x) = T(min(x+dx,1)) -
// T(x). On [1-dx, 1], D(x) = T(1) - T(x) is non-increasing because T is, so
// the sup over [0, 1] equals the max over [0, 1-dx]. There T(x) is
// continuous piecewise linear with breakpoints b_i = i/(m-1), and T(x+dx)
// is continuous piecewise linear with breakpoints b_i - dx. Between
// consecutive points of the union {b_i} ∪ {b_i - dx} ∪ {0, 1-dx}, both are
// linear, so D is linear, and a linear function on a closed interval
// attains its maximum at an endpoint. Hence the max of D over these points
// (0 = b_0 and 1-dx = b_{m-1} - dx are among them) is the supremum, and it
// is attained. Evaluating D at every b_i (with x+dx clamped) and every
// b_i - dx >= 0 only adds genuine values of D, so it cannot overshoot.
//
// The result is increased by a tiny rounding allowance (about 1e-12 relative
// to the table's range, fixed per table) so that floating-point evaluations of
// Eval(min(x+dx,1)) - Eval(x) never exceed it.
//
// Results are memoised by the bits of dx (a hit returns exactly what delta
// computed for that dx), so repeated calls cost a hash and a load.
func (t *Table) Delta(dx float64) float64 {
	if t.memo == nil { // not built by newTable
		d, _ := t.delta(dx)
		return d
	}
	key := math.Float64bits(dx)
	slot := &t.memo[deltaSlot(key)]
	if e := slot.Load(); e != nil && e.dx == key {
		return e.d
	}
	d, _ := t.delta(dx)
	slot.Store(&deltaEntry{dx: key, d: d})
	return d
}

// deltaSlot hashes dx's bits to a memo slot (Fibonacci hashing: the high
// bits of the product mix every bit of the key).
func deltaSlot(key uint64) uint64 {
	return (key * 0x9E3779B97F4A7C15) >> (64 - deltaBits)
}

// delta also returns the maximising x (NaN for the special cases).
func (t *Table) delta(dx float64) (float64, float64) {
	v := t.v
	m := len(v)
	switch {
	case dx != dx || dx < 0:
		return math.Inf(1), math.NaN()
	case dx == 0:
		return 0, math.NaN()
	case dx >= 1:
		return v[m-1] - v[0] + t.margin, 0
	}
	best, arg := math.Inf(-1), 0.0
	inv := 1 / float64(m-1)
	for i := 0; i < m; i++ {
		b := float64(i) * inv
		if i == m-1 {
			b = 1
		}
		if d := t.Eval(min(b+dx, 1)) - v[i]; d > best {
			best, arg = d, b
		}
		if x := b - dx; x >= 0 {
			if d := v[i] - t.Eval(x); d > best {
				best, arg = d, x
			}
		}
	}
	return max(best, 0) + t.margin, arg
}
