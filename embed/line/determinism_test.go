package line

import (
	"context"
	"testing"

	"github.com/dplp/dplp/embed/embedtest"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// The same seed gives bit-identical embeddings at GOMAXPROCS 1 and 4 with
// the default configuration (Workers 0); before, Workers 0 meant GOMAXPROCS
// Hogwild workers, each with its own generator, and runs differed.
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	g, err := gen.BarabasiAlbert(300, 3, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Dim = 16
	cfg.Samples = 100_000
	embedtest.SameAcrossGOMAXPROCS(t, func() ([]float32, error) {
		e, err := Train(context.Background(), g, cfg, randx.Seeded(7), nil)
		if err != nil {
			return nil, err
		}
		return e.Vec, nil
	})
}
