package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// batchOnly hides every method of a Store but LatestBatch's (no
// ListLookup): LatestLists falls back to it.
type batchOnly struct{ s Store }

func (b batchOnly) LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	return b.s.LatestBatch(ctx, users, model, k, prov)
}

// TestLatestLists: LatestLists returns LatestBatch's releases, each with
// its influence set empty, through the store itself, the Timed wrapper and
// the fallback for a store without the method, on both stores and both
// provenances.
func TestLatestLists(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := openDSN(t, fx.dsn(t))
		rng := rand.New(rand.NewPCG(5, 6))
		var batch []Release
		var users []string
		for i := range 40 {
			r := testRelease(fmt.Sprintf("u%d", i), fmt.Sprint(i), 0.5)
			r.Influencers = randomLabels(rng)
			r.Seeded = i%3 == 0
			batch = append(batch, r)
			if i%2 == 0 { // a second release: the newest is returned
				r2 := r
				r2.List = []string{"newer", fmt.Sprint(i)}
				batch = append(batch, r2)
			}
			users = append(users, r.User)
		}
		users = append(users, "nobody")
		if _, err := s.(BudgetStore).ChargeBatch(ctx, batch, Unlimited); err != nil {
			t.Fatal(err)
		}
		timed := Timed(s, func(string) func(time.Duration) { return func(time.Duration) {} })
		if _, ok := timed.(ListLookup); !ok {
			t.Fatal("the Timed store does not implement ListLookup")
		}
		for _, prov := range []Provenance{Crypto, Seeded} {
			want, err := s.LatestBatch(ctx, users, "test-model", 4, prov)
			if err != nil {
				t.Fatal(err)
			}
			withInfl := 0
			for u, r := range want {
				if len(r.Influencers) > 0 {
					withInfl++
				}
				dropInfluence(&r)
				want[u] = r
			}
			if withInfl == 0 {
				t.Fatalf("%v: no release with influencers: the test checks nothing", prov)
			}
			for _, c := range []struct {
				name string
				s    LatestBatcher
			}{{"store", s}, {"timed", timed}, {"fallback", batchOnly{s}}} {
				got, err := LatestLists(ctx, c.s, users, "test-model", 4, prov)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %v: LatestLists\n%+v\nwant LatestBatch without influence sets\n%+v", c.name, prov, got, want)
				}
			}
		}
	})
}
