package release

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRadixSort: radixSort sorts like slices.Sort for any length (the
// comparison fallback below 64 included) and any value range (1 to 4
// byte passes), reusing and growing its scratch.
func TestRadixSort(t *testing.T) {
	var tmp []uint32
	rapid.Check(t, func(t *rapid.T) {
		bits := rapid.IntRange(1, 32).Draw(t, "bits")
		a := rapid.SliceOfN(rapid.Map(rapid.Uint32(), func(x uint32) uint32 { return x >> (32 - bits) }), 0, 3000).Draw(t, "a")
		want := slices.Clone(a)
		slices.Sort(want)
		if got := radixSort(a, &tmp); !slices.Equal(got, want) {
			t.Fatalf("radixSort = %v, want %v", got, want)
		}
	})
}
