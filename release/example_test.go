package release_test

import (
	"context"
	"fmt"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// Streaming seeded lists for every user of a small graph with the
// exponential mechanism on common neighbours: users whose scores no
// protected pair can reach get the exact top-K at no cost, the others pay
// eps_p per pick.
func ExampleRecommender_Stream() {
	edges := []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 3, V: 4}, {U: 4, V: 0}, {U: 0, V: 2}}
	g, _, _ := graph.FromEdges(6, edges, nil)
	prot, _ := protect.New(6, []graph.Edge{{U: 1, V: 2}})
	cfg := calib.Config{Method: calib.Exponential, Kind: score.CN, Eps: 0.5}
	rec, err := release.NewMechanism(cfg, "example:cn", g, prot, release.WithSeed(7))
	if err != nil {
		fmt.Println(err)
		return
	}
	users := []int32{0, 3, 5}
	_ = rec.Stream(context.Background(), users, 2, func(_ int, r release.Result) error {
		fmt.Printf("user %s: %d listed of %d candidates, %d random picks, cost %g\n", r.User, len(r.List), r.Candidates, r.Guarantee.Picks, r.Cost)
		return nil
	})
	// Output:
	// user 0: 2 listed of 2 candidates, 2 random picks, cost 1
	// user 3: 2 listed of 3 candidates, 2 random picks, cost 1
	// user 5: 2 listed of 5 candidates, 0 random picks, cost 0
}
