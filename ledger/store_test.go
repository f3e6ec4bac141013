package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// (a) Many goroutines charging one user against a cap never over-spend, and
// the total recorded is exactly the sum of the costs of the lists returned.
func TestConcurrentCharges(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		const goroutines, perG = 64, 4
		cases := []struct {
			name string
			cap  Cap
		}{
			{"eps-cap", Cap{Eps: 20, Rho: math.Inf(1), PartyEps: math.Inf(1)}},
			{"rho-cap", Cap{Eps: math.Inf(1), Rho: 2, PartyEps: math.Inf(1)}},
			{"party-cap", Cap{Eps: math.Inf(1), Rho: math.Inf(1), PartyEps: 20}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				user := "u-" + c.name
				var mu sync.Mutex
				var sumCost, sumRho float64
				var fresh, refused int
				ids := map[int64]bool{}
				var wg sync.WaitGroup
				errc := make(chan error, goroutines*perG)
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < perG; i++ {
							r, ok, err := s.Charge(ctx, testRelease(user, fmt.Sprintf("%d.%d", g, i), costOf(g+i)), c.cap)
							var be *BudgetError
							mu.Lock()
							switch {
							case err == nil && ok:
								fresh++
								sumCost += r.Cost
								sumRho += r.Rho
								if ids[r.ID] {
									errc <- fmt.Errorf("release id %d returned twice", r.ID)
								}
								ids[r.ID] = true
							case errors.As(err, &be) && errors.Is(err, ErrBudgetExhausted):
								refused++
							default:
								errc <- fmt.Errorf("charge: ok=%v err=%v", ok, err)
							}
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				close(errc)
				for err := range errc {
					t.Error(err)
				}
				sp, err := s.Budget(ctx, user)
				if err != nil {
					t.Fatal(err)
				}
				if sp.Spent != sumCost || sp.Rho != sumRho || sp.Releases != fresh {
					t.Fatalf("store says spent=%v rho=%v releases=%d; returned lists cost %v, rho %v, %d lists", sp.Spent, sp.Rho, sp.Releases, sumCost, sumRho, fresh)
				}
				if sp.Spent > c.cap.Eps || sp.Rho > c.cap.Rho || sp.PartyTotal() > c.cap.PartyEps || sp.PartySpent != sumCost {
					t.Fatalf("over the cap: %+v > %+v", sp, c.cap)
				}
				if refused == 0 || fresh+refused != goroutines*perG {
					t.Fatalf("fresh %d refused %d: the cap should have refused some of %d", fresh, refused, goroutines*perG)
				}
				// The refusals left room for no cost-1 or rho-0.5 release at most.
				if c.cap.Eps-sp.Spent >= 1 && c.cap.Rho-sp.Rho >= 0.5 && c.cap.PartyEps-sp.PartySpent >= 1 {
					t.Fatalf("refused %d charges while %v eps and %v rho remained", refused, c.cap.Eps-sp.Spent, c.cap.Rho-sp.Rho)
				}
				if got := len(releaseIDs(t, s)); got < fresh {
					t.Fatalf("%d release rows, %d fresh charges", got, fresh)
				}
				t.Logf("%d charges accepted (eps %v, rho %v), %d refused", fresh, sp.Spent, sp.Rho, refused)
			})
		}
	})
}

// (b) Two OS processes charging one user on one store never over-spend.
func TestMultiProcessCharges(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		s := openDSN(t, dsn) // creates the schema before the children race
		const capEps, perChild = 30.0, 60
		start := strconv.FormatInt(time.Now().Add(time.Second).UnixNano(), 10)
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for c := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"=charge", "DPLP_LEDGER_TEST_DSN="+dsn, "DPLP_LEDGER_TEST_USER=shared", "DPLP_LEDGER_TEST_START="+start,
					"DPLP_LEDGER_TEST_N="+strconv.Itoa(perChild), "DPLP_LEDGER_TEST_CAP="+strconv.FormatFloat(capEps, 'g', -1, 64))
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Errorf("child %d: %v\n%s", c, err, stderr.String())
				}
				outs[c] = string(out)
			}()
		}
		wg.Wait()
		var sum float64
		fresh, refused := 0, 0
		ids := releaseIDs(t, s)
		lo, hi := [2]int64{math.MaxInt64, math.MaxInt64}, [2]int64{}
		for c, out := range outs {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) == 3 && f[0] == "ok":
					id, _ := strconv.ParseInt(f[1], 10, 64)
					cost, _ := strconv.ParseFloat(f[2], 64)
					if _, ok := ids[id]; !ok {
						t.Errorf("child printed release %d, not in the store", id)
					}
					sum += cost
					fresh++
					lo[c], hi[c] = min(lo[c], id), max(hi[c], id)
				case line == "refused":
					refused++
				default:
					t.Errorf("child output %q", line)
				}
			}
		}
		sp, err := s.Budget(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if sp.Spent != sum || sp.Releases != fresh || len(ids) != fresh {
			t.Fatalf("store: spent %v, %d releases (%d rows); children: %v over %d charges", sp.Spent, sp.Releases, len(ids), sum, fresh)
		}
		if sp.Spent > capEps || refused == 0 {
			t.Fatalf("spent %v (cap %v), %d refused", sp.Spent, capEps, refused)
		}
		t.Logf("2 processes: %d charges (eps %v), %d refused; release ids %d-%d and %d-%d (interleaved: %v)",
			fresh, sum, refused, lo[0], hi[0], lo[1], hi[1], lo[0] < hi[1] && lo[1] < hi[0])
	})
}

// (c) A process killed with SIGKILL at random moments never loses a charge it
// reported as committed, and the store always reopens cleanly.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		openDSN(t, dsn).Close()
		printed := map[int64]bool{}
		const rounds = 6
		for round := 0; round < rounds; round++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=loop", "DPLP_LEDGER_TEST_DSN="+dsn, "DPLP_LEDGER_TEST_USER=victim")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 1024)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// Wait for the first committed charge, then kill at a random moment.
			first := <-lines
			time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, l := range append([]string{first}, drain(lines)...) {
				f := strings.Fields(l)
				if len(f) != 3 || f[0] != "ok" {
					if l != "" {
						t.Fatalf("child output %q (stderr %s)", l, stderr.String())
					}
					continue
				}
				id, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				printed[id] = true
				n++
			}
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("child was not killed: %v (stderr %s)", err, stderr.String())
			}
			// Reopen after every kill: must open cleanly and hold every printed id.
			s, err := Open(ctx, dsn)
			if err != nil {
				t.Fatalf("round %d: reopen after kill -9: %v", round, err)
			}
			ids := releaseIDs(t, s)
			for id := range printed {
				if _, ok := ids[id]; !ok {
					t.Fatalf("round %d: release %d was reported committed but is missing", round, id)
				}
			}
			sp, err := s.Budget(ctx, "victim")
			if err != nil {
				t.Fatal(err)
			}
			if sp.Releases != len(ids) || sp.Spent != 0.125*float64(len(ids)) {
				t.Fatalf("round %d: totals %+v disagree with %d release rows", round, sp, len(ids))
			}
			if fx.sqlite() {
				var res string
				if err := s.(*sqlStore).b.read(ctx, func(q querier) error {
					return q.queryRow(ctx, "PRAGMA integrity_check").Scan(&res)
				}); err != nil || res != "ok" {
					t.Fatalf("integrity_check: %q %v", res, err)
				}
			}
			s.Close()
			t.Logf("round %d: killed after %d printed charges; store has %d", round, n, len(ids))
		}
	})
}

func drain(c chan string) []string {
	var out []string
	for l := range c {
		out = append(out, l)
	}
	return out
}

// (d) The same idempotency key twice charges once and returns the same list,
// also when the two charges race.
func TestIdempotency(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		r := testRelease("alice", "x", 0.5)
		r.IdemKey = "req-1"
		first, fresh, err := s.Charge(ctx, r, Unlimited)
		if err != nil || !fresh {
			t.Fatal(fresh, err)
		}
		again := r
		again.List = []string{"different", "list"}
		second, fresh, err := s.Charge(ctx, again, Unlimited)
		if err != nil || fresh {
			t.Fatal(fresh, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("second charge returned %+v, want the stored %+v", second, first)
		}
		if sp, _ := s.Budget(ctx, "alice"); sp.Spent != 0.5 || sp.Releases != 1 {
			t.Fatalf("charged twice: %+v", sp)
		}
		// A replay is not refused by an exhausted budget.
		if _, fresh, err := s.Charge(ctx, r, Cap{0, 0, 0}); err != nil || fresh {
			t.Fatalf("replay under exhausted cap: fresh=%v err=%v", fresh, err)
		}
		// Same key, other user: independent.
		other := r
		other.User = "bob"
		if _, fresh, err := s.Charge(ctx, other, Unlimited); err != nil || !fresh {
			t.Fatal(fresh, err)
		}
		// Same key for another model: conflict, nothing charged.
		conflict := r
		conflict.Model = "other-model"
		if _, _, err := s.Charge(ctx, conflict, Unlimited); !errors.Is(err, ErrIdemConflict) {
			t.Fatalf("want ErrIdemConflict, got %v", err)
		}
		// Racing duplicates: exactly one fresh charge.
		var wg sync.WaitGroup
		var mu sync.Mutex
		freshN := 0
		lists := map[string]bool{}
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rr := testRelease("carol", strconv.Itoa(g), 1)
				rr.IdemKey = "race"
				got, fresh, err := s.Charge(ctx, rr, Unlimited)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if fresh {
					freshN++
				}
				lists[strings.Join(got.List, "|")] = true
			}()
		}
		wg.Wait()
		if sp, _ := s.Budget(ctx, "carol"); freshN != 1 || len(lists) != 1 || sp.Spent != 1 || sp.Releases != 1 {
			t.Fatalf("racing duplicates: %d fresh, %d distinct lists, %+v", freshN, len(lists), sp)
		}
	})
}

// (e) Exposure sums costs over the releases each party can influence.
func TestExposure(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		rel := func(user string, cost float64, infl ...string) Release {
			return Release{User: user, Model: "m", K: 2, EpsP: cost / 2, Cost: cost, Rho: cost / 10, Influencers: infl}
		}
		for _, r := range []Release{
			rel("u1", 1, "a", "b"),
			rel("u2", 0.5, "b", "b"), // duplicates count once
			rel("u3", 0.25, "*"),
			rel("u4", 2, "c", "*"), // "*" covers c
			rel("u5", 4),           // no influencer: nobody exposed
		} {
			if _, _, err := s.Charge(ctx, r, Unlimited); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		star := 2.25
		want := []Exposure{{"b", 1.5 + star, 0.15 + 0.225}, {"a", 1 + star, 0.1 + 0.225}, {"*", star, 0.225}}
		if len(got) != len(want) {
			t.Fatalf("exposure %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].Party != want[i].Party || got[i].Eps != want[i].Eps || math.Abs(got[i].Rho-want[i].Rho) > 1e-12 {
				t.Fatalf("exposure %+v, want %+v", got, want)
			}
		}
		top, err := s.Exposure(ctx, 1)
		if err != nil || len(top) != 1 || top[0].Party != "b" {
			t.Fatalf("top 1: %+v %v", top, err)
		}
	})
}

// Exposure folds the release records exactly once each while charges and
// other folds (another Store handle: a second replica) run concurrently.
func TestExposureFoldConcurrent(t *testing.T) {
	defer func(b, p int) { foldBatch, foldPages = b, p }(foldBatch, foldPages)
	foldBatch, foldPages = 3, 2 // many fold transactions of two pages
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		a, b := openDSN(t, dsn), openDSN(t, dsn)
		const chargers, perC, parties = 8, 12, 5
		want := map[string]float64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		errc := make(chan error, chargers*perC+64)
		for g := 0; g < chargers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perC; i++ {
					r := testRelease(fmt.Sprintf("u%d", g), fmt.Sprintf("%d", i), float64(1+(g+i)%4)/8)
					r.Influencers = []string{fmt.Sprintf("p%d", (g+i)%parties), fmt.Sprintf("p%d", (g*i)%parties)}
					got, ok, err := []Store{a, b}[i%2].Charge(ctx, r, Unlimited)
					if err != nil || !ok {
						errc <- fmt.Errorf("charge: %v %v", ok, err)
						return
					}
					mu.Lock()
					for _, w := range got.Influencers {
						want[w] += got.Cost
					}
					mu.Unlock()
				}
			}()
		}
		stop := make(chan struct{})
		var fw sync.WaitGroup
		for f := 0; f < 4; f++ {
			fw.Add(1)
			go func() {
				defer fw.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := []Store{a, b}[f%2].Exposure(ctx, 0); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		fw.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		got, err := a.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("exposure %+v, want %v", got, want)
		}
		for _, e := range got {
			if e.Eps != want[e.Party] {
				t.Fatalf("exposure(%s) = %v, want %v (all: %+v)", e.Party, e.Eps, want[e.Party], got)
			}
		}
	})
}

// eachInfluencer gives back exactly the labels json.Marshal stored, whether
// they take the fast path (no escapes) or encoding/json.
func TestEachInfluencer(t *testing.T) {
	for _, list := range [][]string{
		{}, {"a"}, {"a", "b", "c"}, {"*"}, {"ü", "日本", "a b"}, {",", "[", "]", "],[", "\",\""},
		{"quote\"inside", "back\\slash"}, {"<tag>", "a&b"}, {"tab\tnew\nline"}, {"x", "x,y", "\"\""},
	} {
		raw, _ := json.Marshal(list)
		var got []string
		if err := eachInfluencer(string(raw), func(w string) { got = append(got, w) }); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if len(got) != len(list) || (len(got) > 0 && !slices.Equal(got, list)) {
			t.Fatalf("%s: got %q, want %q", raw, got, list)
		}
	}
	for _, bad := range []string{"", "[", "[\"a\"", "[\"a\",]", "{}", "[1]"} {
		if err := eachInfluencer(bad, func(string) {}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// (f) Migrations: versioned, resumable, and a newer schema is refused.
func TestMigrations(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		old, err := openAt(ctx, dsn, 1, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := old.SchemaVersion(ctx); err != nil || v != 1 {
			t.Fatalf("version %d %v, want 1", v, err)
		}
		// A release as version 1 recorded it: spend and exposure rows
		// updated in the charge itself (no folded column yet).
		if err := old.b.write(ctx, func(q querier) error {
			if err := q.exec(ctx, `INSERT INTO releases (user_id, model, k, list, eps_p, cost, rho, seeded, idem_key, created, influencers)
				VALUES ('u', 'test-model', 4, '["a"]', 0.125, 0.5, 0.125, 0, NULL, ?, '["w1","w2"]')`, fmtTime(time.Now())); err != nil {
				return err
			}
			if err := q.exec(ctx, "INSERT INTO spend (user_id, spent, rho, releases, seeded) VALUES ('u', 0.5, 0.125, 1, 0)"); err != nil {
				return err
			}
			return q.exec(ctx, "INSERT INTO exposure (party, eps, rho) VALUES ('w1', 0.5, 0.125), ('w2', 0.5, 0.125)")
		}); err != nil {
			t.Fatal(err)
		}
		if err := old.PutToken(ctx, "u", []byte{1}); err == nil {
			t.Fatal("tokens table exists at version 1")
		}
		old.Close()

		s, err := Open(ctx, dsn) // upgrades 1 -> latest, keeps data
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema {
			t.Fatalf("version %d %v, want %d", v, err, LatestSchema)
		}
		if sp, _ := s.Budget(ctx, "u"); sp.Spent != 0.5 {
			t.Fatalf("data lost in migration: %+v", sp)
		}
		if err := s.PutToken(ctx, "u", []byte{1}); err != nil {
			t.Fatal(err)
		}
		// The old release stays in exposure exactly once; a new one is
		// folded on top of it.
		if _, _, err := s.Charge(ctx, testRelease("u", "after-upgrade", 0.25), Unlimited); err != nil {
			t.Fatal(err)
		}
		expo, err := s.Exposure(ctx, 0)
		if err != nil || len(expo) != 2 || expo[0].Eps != 0.75 || expo[1].Eps != 0.75 {
			t.Fatalf("exposure after upgrade: %+v %v, want w1 and w2 at 0.75", expo, err)
		}
		s.Close()
		again := openDSN(t, dsn) // reopening is a no-op
		if v, _ := again.SchemaVersion(ctx); v != LatestSchema {
			t.Fatalf("version %d after reopen", v)
		}
		var n int
		if err := again.(*sqlStore).b.read(ctx, func(q querier) error {
			return q.queryRow(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n)
		}); err != nil || n != LatestSchema {
			t.Fatalf("%d schema_migrations rows (%v), want %d", n, err, LatestSchema)
		}
		// A store written by a newer dplp is refused, untouched.
		if err := again.(*sqlStore).b.write(ctx, func(q querier) error {
			return q.exec(ctx, "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)", LatestSchema+7, "future", "x")
		}); err != nil {
			t.Fatal(err)
		}
		again.Close()
		_, err = Open(ctx, dsn)
		if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), strconv.Itoa(LatestSchema+7)) || !strings.Contains(err.Error(), "upgrade dplp") {
			t.Fatalf("newer schema: got %v", err)
		}
	})
}

// Invalid inputs are errors (never panics) and record nothing.
func TestInvalidInputs(t *testing.T) {
	good := testRelease("u", "ok", 0.5)
	mod := func(f func(r *Release)) Release { r := good; f(&r); return r }
	cases := []struct {
		name string
		r    Release
		cap  Cap
		want string
	}{
		{"nan cost", mod(func(r *Release) { r.Cost = math.NaN() }), Unlimited, "cost"},
		{"negative cost", mod(func(r *Release) { r.Cost = -1 }), Unlimited, "cost"},
		{"inf cost", mod(func(r *Release) { r.Cost = math.Inf(1) }), Unlimited, "cost"},
		{"nan rho", mod(func(r *Release) { r.Rho = math.NaN() }), Unlimited, "rho"},
		{"negative eps_p", mod(func(r *Release) { r.EpsP = -0.1 }), Unlimited, "eps_p"},
		{"k zero", mod(func(r *Release) { r.K = 0 }), Unlimited, "k=0"},
		{"k negative", mod(func(r *Release) { r.K = -3 }), Unlimited, "k=-3"},
		{"empty user", mod(func(r *Release) { r.User = "" }), Unlimited, "empty user"},
		{"NUL in user", mod(func(r *Release) { r.User = "a\x00b" }), Unlimited, "NUL"},
		{"bad UTF-8 user", mod(func(r *Release) { r.User = "\xff" }), Unlimited, "UTF-8"},
		{"bad UTF-8 label", mod(func(r *Release) { r.List = []string{"\xfe"} }), Unlimited, "UTF-8"},
		{"list longer than k", mod(func(r *Release) { r.K = 1 }), Unlimited, "longer than k"},
		{"empty influencer", mod(func(r *Release) { r.Influencers = []string{""} }), Unlimited, "influencer"},
		{"nan cap", good, Cap{math.NaN(), 1, 1}, "cap"},
		{"nan party cap", good, Cap{1, 1, math.NaN()}, "cap"},
		{"negative party cap", good, Cap{1, 1, -1}, "cap"},
		{"negative cap", good, Cap{1, -1, 1}, "cap"},
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		for _, c := range cases {
			_, _, err := s.Charge(ctx, c.r, c.cap)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: got %v, want an ErrInvalid mentioning %q", c.name, err, c.want)
			}
		}
		if us, err := s.Users(ctx); err != nil || len(us) != 0 {
			t.Fatalf("invalid charges recorded something: %+v %v", us, err)
		}
		if _, err := Open(ctx, "mysql://x"); err == nil || !strings.Contains(err.Error(), "sqlite:PATH") {
			t.Fatalf("unknown store: %v", err)
		}
		if _, err := Open(ctx, "postgres://u:secret@127.0.0.1:1/x?connect_timeout=1"); err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("unreachable postgres: %v (must fail, must not print the password)", err)
		}
	})
}

// Lists, labels and every field survive the round trip exactly.
func TestRoundTripAndLatest(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		labels := []string{"", " ", "a,b", "\"quoted\"", "line\nbreak", "nul\x00byte", "日本語", "emoji 🙂", "\u2028", "\\", "[]", "null"}
		when := time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("X", 3600))
		r := Release{User: "ü 用户", Model: "model: gumbel eps=0.1", K: len(labels), EpsP: 0.1, List: labels,
			Cost: 0.7, Rho: 0.01, Seeded: true, IdemKey: "k-1", Time: when, Influencers: []string{"z", "y", "z"}}
		got, fresh, err := s.Charge(ctx, r, Unlimited)
		if err != nil || !fresh {
			t.Fatal(fresh, err)
		}
		latest, ok, err := s.Latest(ctx, r.User, r.Model, r.K, Seeded)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if !reflect.DeepEqual(got, latest) {
			t.Fatalf("charged %+v\nlatest  %+v", got, latest)
		}
		if !reflect.DeepEqual(latest.List, labels) || !latest.Time.Equal(when) || !latest.Seeded || latest.ID <= 0 ||
			!reflect.DeepEqual(latest.Influencers, []string{"y", "z"}) {
			t.Fatalf("stored %+v", latest)
		}
		// A newer release of the same (user, model, k) becomes the latest.
		r2 := r
		r2.IdemKey, r2.List, r2.Time = "", []string{"only"}, time.Time{}
		if _, _, err := s.Charge(ctx, r2, Unlimited); err != nil {
			t.Fatal(err)
		}
		if l, _, _ := s.Latest(ctx, r.User, r.Model, r.K, Seeded); !reflect.DeepEqual(l.List, []string{"only"}) || l.Time.IsZero() {
			t.Fatalf("latest %+v", l)
		}
		if _, ok, err := s.Latest(ctx, r.User, r.Model, r.K+1, Seeded); ok || err != nil {
			t.Fatalf("latest of another k: %v %v", ok, err)
		}
		sp, err := s.Budget(ctx, r.User)
		if err != nil || sp.Releases != 2 || sp.Seeded != 2 || math.Abs(sp.Spent-1.4) > 1e-12 {
			t.Fatalf("budget %+v %v", sp, err)
		}
		if sp, err := s.Budget(ctx, "nobody"); err != nil || sp != (Spend{User: "nobody"}) {
			t.Fatalf("unknown user %+v %v", sp, err)
		}
	})
}

// ChargeBatch: refused items do not abort the others; items see the ones
// before them.
func TestChargeBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		dup := testRelease("a", "dup", 1)
		dup.IdemKey = "same"
		bad := testRelease("b", "bad", 1)
		bad.K = 0
		rs := []Release{
			testRelease("a", "1", 1), testRelease("b", "1", 1), testRelease("a", "2", 1), // a reaches the cap 2
			testRelease("a", "3", 1), // refused
			bad,                      // invalid
			dup, dup,                 // refused by budget, both (a has no budget left)
			testRelease("c", "1", 0.5),
		}
		res, err := s.ChargeBatch(ctx, rs, Cap{2, math.Inf(1), math.Inf(1)})
		if err != nil {
			t.Fatal(err)
		}
		wantFresh := []bool{true, true, true, false, false, false, false, true}
		for i, r := range res {
			if r.Fresh != wantFresh[i] {
				t.Errorf("item %d: fresh=%v err=%v", i, r.Fresh, r.Err)
			}
		}
		if !errors.Is(res[3].Err, ErrBudgetExhausted) || !errors.Is(res[4].Err, ErrInvalid) || !errors.Is(res[5].Err, ErrBudgetExhausted) {
			t.Fatalf("errors %v / %v / %v", res[3].Err, res[4].Err, res[5].Err)
		}
		us, err := s.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []Spend{{User: "a", Spent: 2, Rho: 1, Releases: 2, PartySpent: 2}, {User: "b", Spent: 1, Rho: 0.5, Releases: 1, PartySpent: 1}, {User: "c", Spent: 0.5, Rho: 0.125, Releases: 1, PartySpent: 0.5}}
		if !reflect.DeepEqual(us, want) {
			t.Fatalf("users %+v, want %+v", us, want)
		}
		if res, err := s.ChargeBatch(ctx, nil, Unlimited); err != nil || len(res) != 0 {
			t.Fatalf("empty batch: %v %v", res, err)
		}
		if res, err := s.ChargeBatch(ctx, []Release{bad}, Unlimited); err != nil || len(res) != 1 || !errors.Is(res[0].Err, ErrInvalid) {
			t.Fatalf("all-invalid batch: %+v %v", res, err)
		}
		// Idempotent duplicates within one batch: the second sees the first.
		d := testRelease("d", "x", 1)
		d.IdemKey = "once"
		res, err = s.ChargeBatch(ctx, []Release{d, d}, Unlimited)
		d0 := res[0].Release
		if err != nil || !res[0].Fresh || res[1].Fresh || res[0].Release.ID != res[1].Release.ID {
			t.Fatalf("batch duplicates: %+v %v", res, err)
		}
		// A key reused within one batch for another model is a conflict;
		// the fresh releases of a batch get increasing IDs in item order,
		// after every earlier one, and read back as charged.
		e, f, g := testRelease("e", "x", 1), testRelease("e", "y", 1), testRelease("f", "x", 1)
		e.IdemKey, f.IdemKey, f.Model = "k", "k", "other-model"
		res, err = s.ChargeBatch(ctx, []Release{e, f, g}, Unlimited)
		if err != nil || !res[0].Fresh || !errors.Is(res[1].Err, ErrIdemConflict) || !res[2].Fresh {
			t.Fatalf("in-batch conflict: %+v %v", res, err)
		}
		if !(res[0].Release.ID > d0.ID && res[2].Release.ID > res[0].Release.ID) {
			t.Fatalf("IDs %d, %d after %d: not increasing", res[0].Release.ID, res[2].Release.ID, d0.ID)
		}
		for _, r := range []Release{res[0].Release, res[2].Release} {
			got, ok, err := s.Latest(ctx, r.User, r.Model, r.K, Crypto)
			if err != nil || !ok || got.ID != r.ID || !reflect.DeepEqual(got.List, r.List) {
				t.Fatalf("Latest(%s) = %+v %v %v, charged %+v", r.User, got, ok, err, r)
			}
		}
	})
}

func TestTokensAndMarks(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		if _, ok, err := s.TokenHash(ctx, "u"); ok || err != nil {
			t.Fatal(ok, err)
		}
		h := []byte{0, 1, 2, 255}
		if err := s.PutToken(ctx, "u", h); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.TokenHash(ctx, "u"); !ok || err != nil || !reflect.DeepEqual(got, h) {
			t.Fatal(got, ok, err)
		}
		if err := s.PutToken(ctx, "u", []byte{9}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.TokenHash(ctx, "u"); !reflect.DeepEqual(got, []byte{9}) {
			t.Fatal(got)
		}
		if err := s.RevokeToken(ctx, "u"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.TokenHash(ctx, "u"); ok {
			t.Fatal("token survived revocation")
		}
		if err := s.RevokeToken(ctx, "never"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutToken(ctx, "u", nil); !errors.Is(err, ErrInvalid) {
			t.Fatal(err)
		}
		if err := s.SetMarks(ctx, "u", []string{"z", "a", "z", "日本"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMarks(ctx, "v", []string{"x"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMarks(ctx, "v", nil); err != nil {
			t.Fatal(err)
		}
		m, err := s.Marks(ctx)
		if err != nil || !reflect.DeepEqual(m, map[string][]string{"u": {"a", "z", "日本"}}) {
			t.Fatal(m, err)
		}
	})
}

// The SQLite store's settings are the documented ones.
func TestSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		dsn  string
		sync int
	}{{"", 2}, {"?synchronous=normal", 1}, {"?synchronous=full", 2}} {
		s := openDSN(t, sqliteFixture.dsn(t)+c.dsn)
		var mode string
		var sync, busy, ckpt int
		err := s.(*sqlStore).b.write(ctx, func(q querier) error {
			if err := q.queryRow(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
				return err
			}
			if err := q.queryRow(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
				return err
			}
			if err := q.queryRow(ctx, "PRAGMA wal_autocheckpoint").Scan(&ckpt); err != nil {
				return err
			}
			return q.queryRow(ctx, "PRAGMA busy_timeout").Scan(&busy)
		})
		if err != nil || mode != "wal" || sync != c.sync || busy != 10000 || ckpt != 10000 {
			t.Fatalf("%q: journal_mode=%s synchronous=%d busy_timeout=%d wal_autocheckpoint=%d (%v)", c.dsn, mode, sync, busy, ckpt, err)
		}
	}
	if _, err := Open(ctx, "sqlite:"+t.TempDir()+"/x.db?synchronous=off"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("synchronous=off accepted: %v", err)
	}
	notDB := t.TempDir() + "/ledger.json"
	os.WriteFile(notDB, []byte(`{"version":1}`+strings.Repeat(" ", 200)), 0o600)
	if _, err := Open(ctx, "sqlite:"+notDB); err == nil || !strings.Contains(err.Error(), notDB) {
		t.Fatalf("opening a JSON file as SQLite: %v", err)
	}
}

// BenchmarkCharge: one charge per call (full, normal: SQLite's
// synchronous; journal: full with the charge journal), and groups of 8
// charges of 1,000 users as the service's group commit makes them
// (group-full, group-journal; ns/op is per group). The journal's figures
// include its applier's work, on another goroutine.
func BenchmarkCharge(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name, opt string
		group     int
	}{{"full", "?synchronous=full", 1}, {"normal", "?synchronous=normal", 1}, {"journal", "?charge_journal=on", 1},
		{"group-full", "", 8}, {"group-journal", "?charge_journal=on", 8}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Open(ctx, "sqlite:"+b.TempDir()+"/l.db"+c.opt)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rs := make([]Release, c.group)
			for i := 0; b.Loop(); i++ {
				for j := range rs {
					rs[j] = testRelease("u"+strconv.Itoa((i*c.group+j)*7919%1000), strconv.Itoa(i*c.group+j), 0.125)
				}
				res, err := s.ChargeBatch(ctx, rs, Unlimited)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
		})
	}
}

// LatestBatch returns, for every user with a release of (model, k), the
// newest one, exactly as Latest does user by user.
func TestLatestBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := context.Background()
		s := fx.open(t)
		var users []string
		for i := 0; i < 1203; i++ { // more than one chunk
			users = append(users, fmt.Sprintf("u%04d", i))
		}
		for i, u := range users {
			if i%3 == 0 {
				continue // no release
			}
			for j := 0; j < 1+i%2; j++ {
				r := testRelease(u, fmt.Sprintf("t%d", j), 0.25)
				if _, _, err := s.Charge(ctx, r, Unlimited); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := s.LatestBatch(ctx, users, testRelease("x", "", 0).Model, testRelease("x", "", 0).K, Crypto)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			want, ok, err := s.Latest(ctx, u, testRelease("x", "", 0).Model, testRelease("x", "", 0).K, Crypto)
			if err != nil {
				t.Fatal(err)
			}
			g, gok := got[u]
			if ok != gok || (ok && (g.ID != want.ID || !slices.Equal(g.List, want.List))) {
				t.Fatalf("user %s: batch %+v (%v), single %+v (%v)", u, g, gok, want, ok)
			}
		}
		if len(got) != 802 {
			t.Fatalf("%d users with releases, want 802", len(got))
		}
	})
}
