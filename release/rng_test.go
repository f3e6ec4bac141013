package release

import (
	"math/rand/v2"
	"testing"
)

// A worker's reusable seeded generator gives exactly UserRNG's streams,
// whatever the order of users, seeds and streams it is asked for.
func TestSeededRNGMatchesUserRNG(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	labels := []string{"", "0", "alice", "a much longer label than a block of SHA-256 would hold in one go, to be sure", "ü"}
	var sr seededRNG
	for i := range 2000 {
		seed := uint64(r.IntN(3))
		label := labels[r.IntN(len(labels))]
		stream := uint64(r.IntN(4))
		got, want := sr.get(seed, label, stream), UserRNG(seed, label, stream)
		for j := range 1 + r.IntN(40) {
			if a, b := got.Uint64(), want.Uint64(); a != b {
				t.Fatalf("draw %d: seed %d label %q stream %d, word %d: %x against UserRNG's %x", i, seed, label, stream, j, a, b)
			}
		}
	}
}

func BenchmarkUserRNG(b *testing.B) {
	b.Run("UserRNG", func(b *testing.B) {
		for b.Loop() {
			UserRNG(1, "12345", 0).Uint64()
		}
	})
	b.Run("seededRNG", func(b *testing.B) {
		var sr seededRNG
		for b.Loop() {
			sr.get(1, "12345", 0).Uint64()
		}
	})
}
