package dplp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

// The whole job: a graph with protected pairs, a trained model, a durable
// ledger, and private lists charged before they are returned.
func Example() {
	ctx := context.Background()
	lg, _ := gen.Latent(400, 2, 0.1, randx.Seeded(1))
	prot, _ := protect.Synthetic(lg.Graph, 0.3, 0, randx.Seeded(2))
	m, _ := dplp.Train(ctx, lg.Graph, prot, dplp.TrainSpec{Score: "aa", Variant: "dplp", EpsP: 0.5, Epochs: 3})
	dir, _ := os.MkdirTemp("", "dplp-example")
	defer os.RemoveAll(dir)
	store, _ := dplp.OpenStore(ctx, "sqlite:"+filepath.Join(dir, "ledger.db"))
	defer store.Close()
	rec, _ := dplp.NewRecommender(m, lg.Graph, prot, dplp.WithStore(store))
	first, _ := rec.Recommend(ctx, []string{"0"}, 10)
	again, _ := rec.Recommend(ctx, []string{"0"}, 10)
	anew, _ := rec.Recommend(ctx, []string{"0"}, 10, dplp.Fresh())
	fmt.Println(len(first[0].List), first[0].Cost, first[0].Fresh, again[0].Cost, again[0].Fresh, anew[0].Cost, anew[0].Fresh)
	// Output: 10 5 true 0 false 5 true
}
