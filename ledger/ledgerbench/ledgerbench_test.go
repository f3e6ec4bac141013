package ledgerbench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dplp/dplp/ledger"
)

// TestRun: every order charges every user once; a second run on the same
// store charges nothing (the sticky key re-serves), and bad options fail.
func TestRun(t *testing.T) {
	ctx := context.Background()
	for _, o := range []Order{OrderLabel, OrderNumber, OrderRandom} {
		st, err := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "l.db"), ledger.SQLiteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{N: 1000, K: 5, Batch: 64, Influencers: 3, Order: o, Seed: 1}
		res, err := Run(ctx, st, opt)
		if err != nil || res.Charged != 1000 {
			t.Fatalf("%s: %+v %v", o, res, err)
		}
		users, err := st.Users(ctx)
		if err != nil || len(users) != 1000 {
			t.Fatalf("%s: %d users, %v", o, len(users), err)
		}
		if again, err := Run(ctx, st, opt); err != nil || again.Charged != 0 {
			t.Fatalf("%s again: %+v %v", o, again, err)
		}
		st.Close()
	}
	if _, err := Run(ctx, nil, Options{N: 10, K: 1, Batch: 1, Order: "sideways"}); err == nil {
		t.Fatal("unknown order accepted")
	}
	if _, err := Run(ctx, nil, Options{N: 0, K: 1, Batch: 1, Order: OrderLabel}); err == nil {
		t.Fatal("N = 0 accepted")
	}
}
