package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dplp/dplp/ledger"
)

// Charging releases against a per-user cap; a retry with the same
// idempotency key returns the first list and charges nothing.
func ExampleStore_Charge() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	st, err := ledger.Open(ctx, "sqlite:"+filepath.Join(dir, "ledger.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	cap := ledger.Cap{Eps: 1, Rho: math.Inf(1), PartyEps: math.Inf(1)}
	rel := ledger.Release{User: "alice", Model: "model-1", K: 3, EpsP: 0.125, Cost: 0.375,
		List: []string{"bob", "carol", "dave"}, IdemKey: "request-1", Influencers: []string{"erin"}}
	for _, key := range []string{"request-1", "request-1", "request-2", "request-3"} {
		rel.IdemKey = key
		got, fresh, err := st.Charge(ctx, rel, cap)
		var be *ledger.BudgetError
		switch {
		case errors.As(err, &be):
			fmt.Printf("%s: refused, spent %g + %g > cap %g\n", key, be.Spent, be.Cost, be.Cap.Eps)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%s: release %d fresh=%v list=%v\n", key, got.ID, fresh, got.List)
		}
	}
	sp, _ := st.Budget(ctx, "alice")
	fmt.Printf("alice: spent %g in %d releases\n", sp.Spent, sp.Releases)
	// Output:
	// request-1: release 1 fresh=true list=[bob carol dave]
	// request-1: release 1 fresh=false list=[bob carol dave]
	// request-2: release 2 fresh=true list=[bob carol dave]
	// request-3: refused, spent 0.75 + 0.375 > cap 1
	// alice: spent 0.75 in 2 releases
}
