package release_test

import (
	"context"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// BenchmarkStreamFacebook releases a seeded top-30 for every user of the
// facebook graph (skipped without ../shared), CN, exponential mechanism.
func BenchmarkStreamFacebook(b *testing.B) {
	g, _, err := graph.ReadFile("../../shared/datasets/facebook.txt")
	if err != nil {
		b.Skip("facebook.txt not available:", err)
	}
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	cfg := calib.Config{Method: calib.Exponential, Kind: score.CN, Eps: 0.1}
	rec, err := release.NewMechanism(cfg, "bench", g, p, release.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	users := make([]int32, g.N())
	for i := range users {
		users[i] = int32(i)
	}
	b.ResetTimer()
	for range b.N {
		if err := rec.Stream(context.Background(), users, 30, func(int, release.Result) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
