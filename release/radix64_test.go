package release

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSortByID: sortByID orders packed (id, position) keys like
// slices.Sort for any length (the comparison path below 256 included) and
// any id range, reusing and growing its scratch.
func TestSortByID(t *testing.T) {
	var tmp []uint64
	rapid.Check(t, func(t *rapid.T) {
		bits := rapid.IntRange(1, 31).Draw(t, "bits")
		n := rapid.IntRange(0, 3000).Draw(t, "n")
		ids := rapid.SliceOfNDistinct(rapid.Uint32Range(0, 1<<bits-1), n, n, rapid.ID[uint32]).Draw(t, "ids")
		keys := make([]uint64, len(ids))
		for i, id := range ids {
			keys[i] = uint64(id)<<32 | uint64(i)
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		if got := sortByID(keys, &tmp); !slices.Equal(got, want) {
			t.Fatalf("sortByID differs from slices.Sort (n %d, bits %d)", n, bits)
		}
	})
}

func BenchmarkSortByID(b *testing.B) {
	keys := make([]uint64, 5000)
	var tmp []uint64
	for b.Loop() {
		for i := range keys {
			keys[i] = uint64((i*2654435761)%1000003)<<32 | uint64(i)
		}
		sortByID(keys, &tmp)
	}
}

func BenchmarkSortByIDComparison(b *testing.B) {
	keys := make([]uint64, 5000)
	for b.Loop() {
		for i := range keys {
			keys[i] = uint64((i*2654435761)%1000003)<<32 | uint64(i)
		}
		slices.Sort(keys)
	}
}
