package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// gateBudget blocks every ChargeBatch until the test releases it, and
// records the size of each.
type gateBudget struct {
	BudgetStore
	sizes   chan int      // the size of each call, when it starts
	release chan struct{} // one receive per call lets it finish
}

func (s gateBudget) ChargeBatch(_ context.Context, rs []Release, _ Cap) ([]ChargeResult, error) {
	s.sizes <- len(rs)
	<-s.release
	return make([]ChargeResult, len(rs)), nil
}

// waitQueued waits until g holds n queued releases.
func waitQueued(g *GroupCommit, n int) {
	for {
		g.mu.Lock()
		q := g.queued
		g.mu.Unlock()
		if q == n {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// With a latency bound, a transaction waits until it holds as many
// releases as the previous one (whose callers come back under steady
// load); a lone caller after an idle spell is committed at once, and one
// that waits in vain is committed when the bound passes. Without a bound
// nothing waits. (No timing is asserted: the test controls when each
// transaction ends and checks which calls each one holds.)
func TestGroupCommitDelay(t *testing.T) {
	for _, c := range []struct {
		name  string
		delay time.Duration
		// Calls queued while the previous transaction runs (the first
		// alone), then calls queued only after it ended.
		rounds    [][2]int
		wantSizes []int
	}{
		// 1 alone; 3 queued meanwhile (>= 1: no wait); then 1 queued
		// during it and 2 after: the third waits for 3.
		{"waits for the previous size", time.Hour, [][2]int{{1, 0}, {3, 0}, {1, 2}}, []int{1, 3, 3}},
		{"no bound, no wait", 0, [][2]int{{1, 0}, {3, 0}, {1, 0}}, []int{1, 3, 1}},
		// The bound passes: the lone call of the third round is committed
		// without the 3 it waited for.
		{"bound passes", time.Millisecond, [][2]int{{1, 0}, {3, 0}, {1, 0}}, []int{1, 3, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := gateBudget{sizes: make(chan int, 16), release: make(chan struct{})}
			g := NewGroupCommitWith(st, GroupOptions{MaxItems: 64, MaxDelay: c.delay})
			var wg sync.WaitGroup
			call := func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := g.ChargeBatch(context.Background(), []Release{testRelease("u", "x", 0.1)}, Unlimited); err != nil {
						t.Error(err)
					}
				}()
			}
			var sizes []int
			queued := 0
			for i, r := range c.rounds {
				for range r[0] {
					call()
				}
				queued += r[0]
				if i == 0 {
					sizes = append(sizes, <-st.sizes) // the lone first call runs
					queued--
					continue
				}
				waitQueued(g, queued) // queued while the previous transaction runs
				st.release <- struct{}{}
				for range r[1] {
					call()
				}
				queued += r[1]
				n := <-st.sizes
				sizes = append(sizes, n)
				queued -= n
			}
			for queued > 0 { // drain
				st.release <- struct{}{}
				n := <-st.sizes
				sizes = append(sizes, n)
				queued -= n
			}
			st.release <- struct{}{}
			wg.Wait()
			if !slices.Equal(sizes, c.wantSizes) {
				t.Fatalf("transactions of %v, want %v", sizes, c.wantSizes)
			}
		})
	}
}
