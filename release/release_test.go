package release_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

var (
	fixOnce sync.Once
	fixG    *graph.Graph
	fixP    *protect.Set
	fixM    *model.Model
	fixErr  error
)

// fixture: a 600-node latent-space graph, 30% of edges protected, an AA
// DPLP model trained on it (public data only).
func fixture(t testing.TB) (*graph.Graph, *protect.Set, *model.Model) {
	t.Helper()
	fixOnce.Do(func() {
		lg, err := gen.Latent(600, 2, 0.07, randx.Seeded(1))
		if err != nil {
			fixErr = err
			return
		}
		fixG = lg.Graph
		if fixP, fixErr = protect.Synthetic(fixG, 0.3, 0.01, randx.Seeded(2)); fixErr != nil {
			return
		}
		s, err := evaluate.FitSplit(fixG, fixP, evaluate.FitConfig{}, randx.Seeded(3))
		if err != nil {
			fixErr = err
			return
		}
		fixM, _, fixErr = evaluate.TrainModel(s, score.AA, "dplp", 0.5, evaluate.TrainOptions{Epochs: 3}, 4)
	})
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fixG, fixP, fixM
}

func allUsers(g *graph.Graph) []int32 {
	out := make([]int32, g.N())
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func seededLists(t *testing.T, rec *release.Recommender, users []int32, k int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := rec.Stream(context.Background(), users, k, func(_ int, r release.Result) error {
		if !r.Seeded {
			t.Fatal("seeded run not marked seeded")
		}
		out[r.User] = r.List
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A seeded run is byte-identical at any GOMAXPROCS and any partitioning or
// order of users: each user's generator comes from (seed, label).
func TestSeededReproducibleAnyProcsAnyPartition(t *testing.T) {
	g, p, m := fixture(t)
	users := allUsers(g)
	var ref map[string][]string
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		rec, err := release.New(m, g, p, release.WithSeed(9))
		if err != nil {
			t.Fatal(err)
		}
		got := seededLists(t, rec, users, 20)
		if ref == nil {
			ref = got
			continue
		}
		for u, l := range ref {
			if !slices.Equal(l, got[u]) {
				t.Fatalf("GOMAXPROCS %d: user %s list differs", procs, u)
			}
		}
	}
	// Reversed order, in two halves released by separate recommenders.
	rev := slices.Clone(users)
	slices.Reverse(rev)
	for _, part := range [][]int32{rev[:len(rev)/3], rev[len(rev)/3:]} {
		rec, _ := release.New(m, g, p, release.WithSeed(9))
		for u, l := range seededLists(t, rec, part, 20) {
			if !slices.Equal(l, ref[u]) {
				t.Fatalf("partitioned run: user %s list differs", u)
			}
		}
	}
	// Another seed gives other lists.
	rec, _ := release.New(m, g, p, release.WithSeed(10))
	other := seededLists(t, rec, users[:50], 20)
	same := 0
	for u, l := range other {
		if slices.Equal(l, ref[u]) {
			same++
		}
	}
	if same == len(other) {
		t.Fatal("seed has no effect")
	}
}

func openStore(t *testing.T) ledger.Store {
	t.Helper()
	s, err := ledger.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Every list returned is charged exactly once, re-serving is free, the cap
// refuses with a typed error, and a list for another K is not re-served.
func TestChargeContract(t *testing.T) {
	g, p, m := fixture(t)
	ctx := context.Background()
	st := openStore(t)
	eps := m.EpsP
	rec, err := release.New(m, g, p, release.WithStore(st), release.WithCap(ledger.Cap{Eps: 12 * eps, Rho: math.Inf(1), PartyEps: math.Inf(1)}))
	if err != nil {
		t.Fatal(err)
	}
	user := g.Label(5)
	first, err := rec.Recommend(ctx, []string{user}, 10)
	if err != nil {
		t.Fatal(err)
	}
	r := first[0]
	if !r.Fresh || len(r.List) != 10 || r.Cost != r.Guarantee.Eps || r.Cost > 10*eps+1e-12 {
		t.Fatalf("first release %+v", r)
	}
	again, err := rec.Recommend(ctx, []string{user}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Fresh || again[0].Cost != 0 || !slices.Equal(again[0].List, r.List) {
		t.Fatalf("re-serve %+v", again[0])
	}
	// K = 3 is another release (not the K = 10 list cut short): 3 picks more
	// would exceed the cap of 12 picks only after the first 10 were charged.
	k3, err := rec.Recommend(ctx, []string{user}, 3)
	if r.Cost == 10*eps {
		if !errors.Is(err, ledger.ErrBudgetExhausted) || k3[0].Err == nil || k3[0].List != nil {
			t.Fatalf("over-cap release not refused: %+v, %v", k3[0], err)
		}
		var be *ledger.BudgetError
		if !errors.As(k3[0].Err, &be) {
			t.Fatalf("refusal is %T, want *ledger.BudgetError", k3[0].Err)
		}
	}
	sp, err := st.Budget(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Spent != r.Cost || sp.Releases != 1 {
		t.Fatalf("store records %+v, want one release costing %v", sp, r.Cost)
	}
}

// A user with fewer candidates than K is charged for what is released.
func TestChargeWhatIsReleased(t *testing.T) {
	edges := []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 0, V: 2}}
	g, _, err := graph.FromEdges(5, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(5, []graph.Edge{{U: 1, V: 2}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, m := fixture(t)
	rec, err := release.New(m, g, p, release.WithoutLedger())
	if err != nil {
		t.Fatal(err)
	}
	res, err := rec.Recommend(context.Background(), []string{"0"}, 30)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// Candidates of 0: 3 and 4.
	if len(r.List) != 2 || r.Notice == "" {
		t.Fatalf("got %+v", r)
	}
	if r.Cost != float64(r.Guarantee.Picks)*m.EpsP || r.Guarantee.Picks > 2 {
		t.Fatalf("charged %v for %d picks", r.Cost, r.Guarantee.Picks)
	}
}

// The rejection path for zero-block members gives every member the same
// chance (chi-square against uniform).
func TestZeroBlockUniform(t *testing.T) {
	// A star plus isolated nodes: for a leaf, every non-neighbour except
	// the other leaves is in the zero block.
	n := 60
	var edges []graph.Edge
	for v := 1; v < 6; v++ {
		edges = append(edges, graph.Edge{U: 0, V: int32(v)})
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(n, []graph.Edge{{U: 0, V: 2}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, m := fixture(t)
	rec, err := release.New(m, g, p, release.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := score.New(g, p, score.AA)
	w := sc.NewWorker()
	var r score.Result
	w.Score(1, &r)
	if r.Zero < 40 {
		t.Fatalf("zero block %d", r.Zero)
	}
	_ = rec
	var sm release.Sampler
	plan := planFor(t, m, &r)
	counts := map[int32]int{}
	draws := 20000
	rng := randx.Seeded(3)
	for range draws {
		in := release.UserInput{N: n, Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, InZero: w.InZero, ZeroList: w.ZeroCands, DeltaS: r.DeltaS, SMax: r.SMax}
		out, err := sm.Sample(plan, &in, 1, rng)
		if err != nil {
			t.Fatal(err)
		}
		if v := out.IDs[0]; w.InZero(v) {
			counts[v]++
		}
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	if len(counts) != r.Zero {
		t.Fatalf("%d distinct zero-block members drawn, want %d", len(counts), r.Zero)
	}
	exp := float64(total) / float64(r.Zero)
	chi := 0.0
	for _, c := range counts {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	// df = Zero-1 (~53); 110 is far in the tail (p < 1e-5).
	if chi > 110 {
		t.Fatalf("zero-block draws not uniform: chi-square %.1f over %d members", chi, r.Zero)
	}
}

// Influence sets: toggling the protected pairs of a node outside u's set
// never changes any of u's scores (brute force on small random graphs), and
// the set a release records (blocks minus exclusions for CN/AA/RA) is that
// set exactly (TestBlocksMatchRaw is this test's second half).
func TestInfluenceSets(t *testing.T) {
	r := randx.Seeded(5)
	blocked := false
	defer func() {
		if !t.Failed() && !blocked {
			t.Error("no non-empty block-coded set was checked")
		}
	}()
	for it := 0; it < 25; it++ {
		n := 8 + r.IntN(5)
		var edges, prot []graph.Edge
		for a := 0; a < n; a++ {
			for b := a + 1; b < n; b++ {
				e := graph.Edge{U: int32(a), V: int32(b)}
				if r.Float64() < 0.35 {
					edges = append(edges, e)
					if r.Float64() < 0.3 {
						prot = append(prot, e)
					}
				} else if r.Float64() < 0.1 {
					prot = append(prot, e)
				}
			}
		}
		g, _, err := graph.FromEdges(n, edges, nil)
		if err != nil {
			continue
		}
		p, err := protect.New(n, prot)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []score.Kind{score.CN, score.AA, score.RA, score.JC} {
			for u := int32(0); int(u) < n; u++ {
				set := map[int32]bool{}
				ids, all := release.InfluencersForTest(g, p, kind, u)
				if all {
					t.Fatalf("%v: everyone", kind)
				}
				for _, w := range ids {
					set[w] = true
				}
				// The recorded labels are the same set, strictly increasing
				// bytewise (the ledger's fast path; decimal labels put "10"
				// before "9").
				labels := release.InfluencerLabelsForTest(g, p, kind, u)
				want := make([]string, len(ids))
				for i, w := range ids {
					want[i] = g.Label(w)
				}
				slices.Sort(want)
				if !slices.Equal(labels, want) {
					t.Fatalf("%v u=%d: labels %q, want %q", kind, u, labels, want)
				}
				// What a release hands the ledger (blocks minus
				// exclusions for CN/AA/RA, node ids for JC) is the
				// same set (TestBlocksMatchRaw).
				rec, blocks := release.RecordedInfluencersForTest(g, p, kind, u)
				if len(want) == 0 {
					want = nil
				}
				if len(rec) == 0 {
					rec = nil
				}
				if !slices.Equal(rec, want) {
					t.Fatalf("%v u=%d: recorded %q (blocks %v), want %q", kind, u, rec, blocks, want)
				}
				blocked = blocked || blocks && len(want) > 0
				err := p.Neighbours(g, u, 0, func(w int32, xs []int32, g2 *graph.Graph) error {
					if set[w] {
						return nil
					}
					for v := int32(0); int(v) < n; v++ {
						if v == u || g.HasEdge(u, v) {
							continue
						}
						s1, _ := score.Pair(g, p, kind, u, v)
						s2, _ := score.Pair(g2, p, kind, u, v)
						if s1 != s2 {
							return fmt.Errorf("%v: w=%d outside u=%d's influence set changes s(u,%d) by toggling %v", kind, w, u, v, xs)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func planFor(t *testing.T, m *model.Model, r *score.Result) *calib.Plan {
	t.Helper()
	cfg := calib.Config{Method: calib.Exponential, Kind: score.AA, Eps: m.EpsP, Transform: m}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := cfg.Plan(calib.QueryOf(r))
	return &p
}

// The exact sampler releases valid lists, reproducibly for a seed, and is
// refused for configurations it does not implement.
func TestExactSampler(t *testing.T) {
	g, p, m := fixture(t)
	run := func() map[string][]string {
		rec, err := release.New(m, g, p, release.WithSeed(4), release.WithExactSampler())
		if err != nil {
			t.Fatal(err)
		}
		return seededLists(t, rec, allUsers(g)[:200], 15)
	}
	a, b := run(), run()
	for u, l := range a {
		if len(l) != 15 || !slices.Equal(l, b[u]) {
			t.Fatalf("user %s: %v vs %v", u, l, b[u])
		}
		seen := map[string]bool{}
		for _, v := range l {
			if seen[v] || v == u {
				t.Fatalf("user %s: invalid list %v", u, l)
			}
			seen[v] = true
		}
	}
	cfg := calib.Config{Method: calib.Laplace, Kind: score.CN, Eps: 0.5, ExactSampler: true}
	if err := cfg.Validate(); err == nil {
		t.Fatal("exact sampler accepted for Laplace")
	}
}

// The default sampler is exact for crypto-seeded (deployment) releases and
// float for seeded runs.
func TestAutoSampler(t *testing.T) {
	g, p, m := fixture(t)
	for _, c := range []struct {
		opts  []release.Option
		exact bool
	}{{nil, true}, {[]release.Option{release.WithSeed(1)}, false}, {[]release.Option{release.WithSampler(release.SamplerFloat)}, false}} {
		rec, err := release.New(m, g, p, append(c.opts, release.WithoutLedger())...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := rec.Recommend(context.Background(), []string{g.Label(3)}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res[0].Guarantee.Mechanism, "exact"); got != c.exact {
			t.Fatalf("options %d: mechanism %q, want exact=%v", len(c.opts), res[0].Guarantee.Mechanism, c.exact)
		}
	}
	if _, err := release.New(m, g, p, release.WithSampler("gauss")); err == nil {
		t.Fatal("unknown sampler accepted")
	}
}

// A cancelled context stops a stream at the next window: no further lists
// are sampled or charged.
func TestStreamCancel(t *testing.T) {
	g, p, m := fixture(t)
	st := openStore(t)
	rec, err := release.New(m, g, p, release.WithStore(st), release.WithFresh(true))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * 4096 // three windows
	users := make([]int32, 0, n)
	for len(users) < n {
		users = append(users, allUsers(g)...)
	}
	users = users[:n]
	ctx, cancel := context.WithCancel(context.Background())
	emitted := 0
	err = rec.Stream(ctx, users, 5, func(int, release.Result) error {
		emitted++
		if emitted == 1 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if emitted > 4096 {
		t.Fatalf("%d lists emitted after cancellation in the first window", emitted)
	}
	if total := totalReleases(t, st); total > 4096 {
		t.Fatalf("%d releases charged, want at most one window", total)
	}
}

// totalReleases is the number of releases charged in st.
func totalReleases(t *testing.T, st ledger.Store) int {
	t.Helper()
	sp, err := st.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range sp {
		total += s.Releases
	}
	return total
}

// Windows are pipelined (window w+1 is looked up and sampled while window w
// is charged), yet a sticky stream in which every user appears in three
// windows charges each user once and re-serves that one list; an emit error
// stops the stream with at most one window charged after it.
func TestStreamPipelinedWindows(t *testing.T) {
	g, p, m := fixture(t)
	st := openStore(t)
	rec, err := release.New(m, g, p, release.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	var users []int32
	for len(users) < 3*4096+7 {
		users = append(users, allUsers(g)...)
	}
	lists := map[string][]string{}
	fresh := 0
	err = rec.Stream(context.Background(), users, 5, func(i int, r release.Result) error {
		if r.Err != nil {
			return r.Err
		}
		if r.User != g.Label(users[i]) {
			return fmt.Errorf("result %d is for %s, want %s", i, r.User, g.Label(users[i]))
		}
		if r.Fresh {
			fresh++
		}
		if prev, ok := lists[r.User]; ok && !slices.Equal(prev, r.List) {
			return fmt.Errorf("user %s got %v, then %v", r.User, prev, r.List)
		}
		lists[r.User] = r.List
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := st.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	charged := 0
	for _, s := range sp {
		if s.Releases != 1 {
			t.Fatalf("user %s charged %d times", s.User, s.Releases)
		}
		charged++
	}
	if charged != g.N() || fresh != g.N() {
		t.Fatalf("%d users charged, %d fresh lists; want %d each", charged, fresh, g.N())
	}

	st2 := openStore(t)
	rec2, err := release.New(m, g, p, release.WithStore(st2), release.WithFresh(true))
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	err = rec2.Stream(context.Background(), users, 5, func(i int, _ release.Result) error {
		if i == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the emit error", err)
	}
	if total := totalReleases(t, st2); total > 4096 {
		t.Fatalf("%d releases charged, want at most the first window", total)
	}
}

// A crypto-seeded Recommender without a store is refused: its lists would
// leave uncharged.
func TestDeploymentNeedsLedger(t *testing.T) {
	g, p, m := fixture(t)
	if _, err := release.New(m, g, p); err == nil {
		t.Fatal("crypto-seeded Recommender without a store accepted")
	}
	if _, err := release.New(m, g, p, release.WithSeed(1)); err != nil {
		t.Fatalf("seeded Recommender refused: %v", err)
	}
}

// TestNoPublicScores: a release whose plan does not read s_pub scores
// without it (score.Worker.ScoreNoPublic), and its seeded lists are the
// ones it gives with the public scores computed. A plan that reads them
// refuses an input without them.
func TestNoPublicScores(t *testing.T) {
	g, p, m := fixture(t)
	cfg := calib.Config{Method: calib.Exponential, Eps: m.EpsP, Transform: m}
	if cfg.ReadsPublic() {
		t.Fatal("a dplp model's plan reads s_pub")
	}
	users := allUsers(g)
	lists := func(public bool) map[string][]string {
		defer release.SetAlwaysPublicForTest(public)()
		rec, err := release.New(m, g, p, release.WithSeed(5))
		if err != nil {
			t.Fatal(err)
		}
		return seededLists(t, rec, users, 10)
	}
	with, without := lists(true), lists(false)
	for u, l := range with {
		if !slices.Equal(l, without[u]) {
			t.Fatalf("user %s: %v with the public scores, %v without", u, l, without[u])
		}
	}

	sc, err := score.New(g, p, score.AA)
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	var res score.Result
	w.ScoreNoPublic(0, &res)
	if len(res.Cands) == 0 || len(res.Pub) != 0 {
		t.Fatalf("user 0: %d candidates, %d public scores; want some and none", len(res.Cands), len(res.Pub))
	}
	in := release.InputOf(w, &res, g.N(), true)
	lex := calib.Config{Method: calib.Exponential, Eps: m.EpsP, Transform: m, Lexicographic: true}
	var sm release.Sampler
	for _, c := range []struct {
		cfg  calib.Config
		fail bool
	}{{cfg, false}, {lex, true}} {
		plan := c.cfg.Plan(calib.QueryOf(&res))
		_, err := sm.Sample(&plan, &in, 5, randx.Seeded(1))
		if (err != nil) != c.fail {
			t.Fatalf("lexicographic %v: Sample without s_pub: %v", c.cfg.Lexicographic, err)
		}
	}
}
