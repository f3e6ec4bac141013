package sorted

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestMinus(t *testing.T) {
	for _, c := range []struct{ a, b, want []int32 }{
		{nil, nil, nil},
		{[]int32{1, 2, 3}, nil, []int32{1, 2, 3}},
		{nil, []int32{1}, nil},
		{[]int32{1, 2, 3}, []int32{2}, []int32{1, 3}},
		{[]int32{1, 2, 3}, []int32{0, 1, 2, 3, 4}, nil},
		{[]int32{-5, 0, 7, 9}, []int32{-6, 0, 8, 9}, []int32{-5, 7}},
	} {
		if got := Minus(nil, c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("Minus(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestMinusBruteForce: Minus equals the filter "not in b" on random
// ascending sets, also when dst is reused.
func TestMinusBruteForce(t *testing.T) {
	set := func(t *rapid.T, name string) []int32 {
		xs := rapid.SliceOfDistinct(rapid.Int32Range(-50, 50), func(x int32) int32 { return x }).Draw(t, name)
		slices.Sort(xs)
		return xs
	}
	rapid.Check(t, func(t *rapid.T) {
		a, b := set(t, "a"), set(t, "b")
		var want []int32
		for _, x := range a {
			if !slices.Contains(b, x) {
				want = append(want, x)
			}
		}
		dst := make([]int32, rapid.IntRange(0, 5).Draw(t, "dst"))
		if got := Minus(dst, a, b); !slices.Equal(got, want) {
			t.Fatalf("Minus(%v, %v) = %v, want %v", a, b, got, want)
		}
	})
}
