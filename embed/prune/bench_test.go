package prune

import (
	"context"
	"testing"

	"github.com/dplp/dplp/linkclf/lptest"
	"github.com/dplp/dplp/randx"
)

func benchEpoch(b *testing.B, name string) {
	path := lptest.Dataset(name)
	if path == "" {
		b.Skipf("%s not found", name)
	}
	g, err := lptest.ReadEdgeList(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 1
	for b.Loop() {
		if _, err := Train(context.Background(), g, cfg, randx.Seeded(1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEpoch* time one PRUNE epoch with the default sizes (Train runs 50).
func BenchmarkEpochYeast(b *testing.B)    { benchEpoch(b, "yeast.txt") }
func BenchmarkEpochFacebook(b *testing.B) { benchEpoch(b, "facebook.txt") }
