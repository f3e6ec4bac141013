package gcn

import (
	"context"
	"testing"

	"github.com/dplp/dplp/embed/embedtest"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// GCN's parallel kernels partition rows, so the same seed gives
// bit-identical embeddings at GOMAXPROCS 1 and 4 (Workers 0).
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g, err := gen.BarabasiAlbert(300, 3, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Epochs = 5
	embedtest.SameAcrossGOMAXPROCS(t, func() ([]float32, error) {
		e, err := Train(context.Background(), g, cfg, randx.Seeded(7), nil)
		if err != nil {
			return nil, err
		}
		return e.Vec, nil
	})
}
