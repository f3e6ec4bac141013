package mech

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrInvalid is wrapped by every argument error returned by this package.
var ErrInvalid = errors.New("mech: invalid argument")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// Utilities is one query's utility vector: individual candidates Vals[i]
// followed by blocks of candidates sharing one value. Blocks let a mechanism
// handle thousands of equal scores (typically CN = 0) in closed form.
//
// A pick is an index into the virtual concatenation
// [Vals..., block0 members..., block1 members..., ...]; see Len.
type Utilities struct {
	Vals   []float64
	Blocks []Block
}

// Block is Size candidates that all have utility Val.
type Block struct {
	Val  float64
	Size int
}

// Len is the number of candidates, len(Vals) plus all block sizes.
func (u *Utilities) Len() int {
	n := len(u.Vals)
	for _, b := range u.Blocks {
		n += b.Size
	}
	return n
}

// Validate reports whether every utility is finite and every block size is
// non-negative (and the total fits in an int32, far beyond any graph here).
func (u *Utilities) Validate() error {
	if u == nil {
		return invalid("nil utilities")
	}
	for i, v := range u.Vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return invalid("utility %d is %v", i, v)
		}
	}
	return u.ValidateBlocks()
}

// ValidateBlocks is Validate without the individual values: the blocks'
// values and sizes and the number of candidates. A sampler that checks
// every individual value as it reads it (mech/exact) calls this first.
func (u *Utilities) ValidateBlocks() error {
	if u == nil {
		return invalid("nil utilities")
	}
	n := len(u.Vals)
	for b, blk := range u.Blocks {
		if math.IsNaN(blk.Val) || math.IsInf(blk.Val, 0) {
			return invalid("block %d value is %v", b, blk.Val)
		}
		if blk.Size < 0 {
			return invalid("block %d has negative size %d", b, blk.Size)
		}
		n += blk.Size
		if n > math.MaxInt32 {
			return invalid("more than %d candidates", math.MaxInt32)
		}
	}
	return nil
}

// Materialize appends the utility of every candidate, in pick-index order,
// to dst[:0] (tests, audits and small problems).
func (u *Utilities) Materialize(dst []float64) []float64 {
	dst = append(dst[:0], u.Vals...)
	for _, b := range u.Blocks {
		for range b.Size {
			dst = append(dst, b.Val)
		}
	}
	return dst
}

// Value is the utility of candidate i (a pick index); ok is false when i is
// out of range.
func (u *Utilities) Value(i int) (v float64, ok bool) {
	if i < 0 {
		return 0, false
	}
	if i < len(u.Vals) {
		return u.Vals[i], true
	}
	i -= len(u.Vals)
	for _, b := range u.Blocks {
		if i < b.Size {
			return b.Val, true
		}
		i -= b.Size
	}
	return 0, false
}

func checkCommon(u *Utilities, k int, r *rand.Rand) error {
	if k < 1 {
		return invalid("k = %d, need k >= 1", k)
	}
	if r == nil {
		return invalid("nil random source")
	}
	return u.Validate()
}

func checkScale(scale float64) error {
	if !(scale >= 0) || math.IsInf(scale, 0) {
		return invalid("noise scale %v, need finite >= 0", scale)
	}
	return nil
}

func checkVals(vals []float64) error {
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return invalid("utility %d is %v", i, v)
		}
	}
	return nil
}
