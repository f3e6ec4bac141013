package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// GroupCommit: concurrent ChargeBatch calls are committed in groups, each
// caller gets its own items' results, the cap holds across the group
// exactly as one ChargeBatch in arrival order would hold it (no user
// spends past it), and every item is recorded once.
func TestGroupCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		st := fx.open(t)
		ctx := ctxT(t)
		var items, batches atomic.Int64
		g := NewGroupCommit(st, 8, func(n int) { items.Add(int64(n)); batches.Add(1) })
		const callers, per = 24, 3
		cap := Cap{Eps: 2, Rho: Unlimited.Rho, PartyEps: Unlimited.PartyEps}
		var wg sync.WaitGroup
		res := make([][]ChargeResult, callers)
		errs := make([]error, callers)
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rs []Release
				for i := range per {
					// Users shared between callers: the cap binds across the group.
					rs = append(rs, testRelease(fmt.Sprintf("u%d", (c+i)%5), fmt.Sprintf("c%d-%d", c, i), 0.5))
				}
				res[c], errs[c] = g.ChargeBatch(ctx, rs, cap)
			}()
		}
		wg.Wait()
		fresh := 0
		for c := range callers {
			if errs[c] != nil || len(res[c]) != per {
				t.Fatalf("caller %d: %d results, %v", c, len(res[c]), errs[c])
			}
			for _, r := range res[c] {
				switch {
				case r.Err == nil && r.Fresh:
					fresh++
				case errors.Is(r.Err, ErrBudgetExhausted):
				default:
					t.Fatalf("caller %d: result %+v", c, r)
				}
			}
		}
		if items.Load() != callers*per || batches.Load() < 1 || batches.Load() > callers {
			t.Fatalf("onBatch saw %d items in %d batches", items.Load(), batches.Load())
		}
		// Five users with a cap of 2 at 0.5 per list: exactly 4 lists each.
		if fresh != 5*4 {
			t.Fatalf("%d fresh lists, want 20 (the cap must hold across the group)", fresh)
		}
		us, err := st.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if u.Spent != 2 || u.Releases != 4 {
				t.Fatalf("user %s: spent %v in %d releases, want 2 in 4", u.User, u.Spent, u.Releases)
			}
		}
	})
}

// failingBudget fails every ChargeBatch.
type failingBudget struct{ BudgetStore }

func (failingBudget) ChargeBatch(context.Context, []Release, Cap) ([]ChargeResult, error) {
	return nil, errors.New("disk on fire")
}

// A failed group transaction fails every caller in it, and none blocks.
func TestGroupCommitError(t *testing.T) {
	g := NewGroupCommit(failingBudget{}, 0, nil)
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.ChargeBatch(context.Background(), []Release{testRelease("u", fmt.Sprint(c), 1)}, Unlimited)
			if err == nil || res != nil {
				t.Errorf("caller %d: %v, %v; want the transaction's error", c, res, err)
			}
		}()
	}
	wg.Wait()
}

// Timed reports each call under its operation and returns the store's
// own results; Untimed unwraps it.
func TestTimed(t *testing.T) {
	st := sqliteFixture.open(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	seen := map[string]int{}
	ts := Timed(st, func(op string) func(time.Duration) {
		return func(d time.Duration) {
			if d < 0 {
				t.Errorf("%s: negative duration", op)
			}
			mu.Lock()
			seen[op]++
			mu.Unlock()
		}
	})
	if Untimed(ts) != st || Untimed(st) != st {
		t.Fatal("Untimed does not unwrap")
	}
	if _, fresh, err := ts.Charge(ctx, testRelease("a", "x", 0.5), Unlimited); err != nil || !fresh {
		t.Fatal(fresh, err)
	}
	if sp, err := ts.Budget(ctx, "a"); err != nil || sp.Spent != 0.5 {
		t.Fatal(sp, err)
	}
	if err := ts.PutToken(ctx, "a", []byte("h")); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := ts.TokenHash(ctx, "a"); err != nil || !ok || string(h) != "h" {
		t.Fatal(h, ok, err)
	}
	if err := ts.SetMarks(ctx, "a", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if m, err := ts.(UserMarker).UserMarks(ctx, "a"); err != nil || len(m) != 1 {
		t.Fatal(m, err)
	}
	for op, want := range map[string]int{"charge": 1, "budget": 1, "put_token": 1, "token_hash": 1, "set_marks": 1, "marks": 1} {
		if seen[op] != want {
			t.Errorf("%s observed %d times, want %d (%v)", op, seen[op], want, seen)
		}
	}
}
