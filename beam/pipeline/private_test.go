package pipeline

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/score"
)

// The release stage picks release.Recommender's SamplerAuto: the exact
// sampler with crypto noise for private runs, the float sampler with
// UserRNG for seeded ones.
func TestReleaseSamplerChoice(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		variant    string
		seeded     bool
		wantExact  bool
		wantCrypto bool
	}{
		{"dplp", false, true, true},
		{"dplp", true, false, false},
		{"dplp-pub", false, true, true},
		{"dplp-pub", true, false, false},
	} {
		mb, err := os.ReadFile(writeModelVariant(t, dir, "aa", c.variant, 0.5))
		if err != nil {
			t.Fatal(err)
		}
		f := &releaseFn{Kind: int(score.AA), K: 3, Seeded: c.seeded, Seed: 1, Model: mb}
		if err := f.Setup(); err != nil {
			t.Fatalf("%s seeded=%v: %v", c.variant, c.seeded, err)
		}
		if f.cfg.ExactSampler != c.wantExact || (f.crypto != nil) != c.wantCrypto {
			t.Errorf("%s seeded=%v: exact sampler %v, crypto generator %v; want %v, %v", c.variant, c.seeded, f.cfg.ExactSampler, f.crypto != nil, c.wantExact, c.wantCrypto)
		}
		// Seeded generators are the per-user PRF (equal streams), crypto
		// ones are not.
		x, y := f.rng("u").Uint64(), f.rng("u").Uint64()
		if (x == y) != c.seeded {
			t.Errorf("%s seeded=%v: two draws for one user equal: %v", c.variant, c.seeded, x == y)
		}
	}
}

// A private run (no seed) writes only the charges file; ApplyCharges then
// writes lists marked "seeded":false whose costs add up to the ledger's
// total spend. Two private runs draw different lists; a seeded run under the
// same run id is recorded as seeded and never returned to the private
// charges.
func TestPrivateRelease(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(21, 22))
	edges, marks := mixedGraph(rng, 60, 220)
	gp, mp := filepath.Join(dir, "g"), filepath.Join(dir, "m")
	if err := os.WriteFile(gp, []byte(edges), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, []byte(marks), 0o644); err != nil {
		t.Fatal(err)
	}
	modelPath := writeModel(t, dir, "aa", 0.5)
	mb, err := os.ReadFile(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := loadRef(t, gp, mp, "")
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(dir, "ledger.db")
	const k = 4

	private := func(run string) ([]Charge, []RecLine) {
		t.Helper()
		ch := filepath.Join(dir, run+".charges")
		out := filepath.Join(dir, run+".jsonl")
		runBeam(t, Config{Graph: gp, Protected: mp, Model: mb, K: k, Charges: ch, RunID: run})
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: a lists file exists before the charges were applied (%v)", run, err)
		}
		cs, err := ReadCharges(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ApplyCharges(ctx, dsn, ch, math.Inf(1), "", out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Fresh != g.N() || res.Again != 0 || len(res.Refused) != 0 {
			t.Fatalf("%s: %+v, want %d fresh charges", run, res, g.N())
		}
		var lines []RecLine
		for _, l := range readLines(t, out) {
			var r RecLine
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(l, `,"seeded":false}`) {
				t.Errorf("%s: line not marked private: %s", run, l)
			}
			lines = append(lines, r)
		}
		return cs, lines
	}

	cs1, lines1 := private("p1")
	if len(lines1) != g.N() {
		t.Fatalf("%d lines for %d users", len(lines1), g.N())
	}
	spent, picked := 0.0, 0
	for i, c := range cs1 {
		if c.Seeded {
			t.Errorf("user %s: private charge marked seeded", c.User)
		}
		if c.Cost != float64(int(math.Round(c.Cost/0.5)))*0.5 || c.Cost > k*0.5 {
			t.Errorf("user %s: cost %v is not a number of picks x eps_p", c.User, c.Cost)
		}
		r := lines1[i]
		if r.User != c.User || !slices.Equal(r.Recommendations, c.List) || r.Cost != c.Cost {
			t.Errorf("line %d (%s) differs from its charge %+v", i+1, r.User, c)
		}
		// Valid list: distinct non-neighbours other than the user.
		u, _ := g.ID(r.User)
		seen := map[string]bool{}
		for _, v := range r.Recommendations {
			vid, ok := g.ID(v)
			if !ok || vid == u || g.HasEdge(u, vid) || seen[v] {
				t.Errorf("user %s: invalid recommendation %q in %q", r.User, v, r.Recommendations)
			}
			seen[v] = true
		}
		if len(r.Recommendations) != min(k, g.N()-1-g.Degree(u)) {
			t.Errorf("user %s: %d recommendations, want %d", r.User, len(r.Recommendations), min(k, g.N()-1-g.Degree(u)))
		}
		spent += r.Cost
		if r.Cost > 0 {
			picked++
		}
	}
	if picked == 0 {
		t.Fatal("no list had a random pick: the test checks nothing about the noise")
	}
	st, err := ledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	total := func() float64 {
		us, err := st.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, u := range us {
			sum += u.Spent
		}
		return sum
	}
	if got := total(); math.Abs(got-spent) > 1e-9 {
		t.Errorf("lines cost %v in all, the ledger recorded %v", spent, got)
	}

	// Fresh crypto noise: a second private run gives other lists.
	_, lines2 := private("p2")
	same := 0
	for i := range lines1 {
		if slices.Equal(lines1[i].Recommendations, lines2[i].Recommendations) {
			same++
		}
	}
	if same == len(lines1) {
		t.Error("two private runs released identical lists: the noise is not fresh")
	}

	// A seeded run under the private run's id: charged as seeded, and the
	// private lists stay what a private request gets back.
	sch := filepath.Join(dir, "s.charges")
	runBeam(t, Config{Graph: gp, Protected: mp, Model: mb, K: k, Seed: seedp(5), Out: filepath.Join(dir, "s.uncharged"), Charges: sch, RunID: "p1"})
	if _, err := ApplyCharges(ctx, dsn, sch, math.Inf(1), filepath.Join(dir, "s.uncharged"), filepath.Join(dir, "s.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, l := range readLines(t, filepath.Join(dir, "s.jsonl")) {
		if !strings.HasSuffix(l, `,"seeded":true}`) {
			t.Errorf("seeded line not marked seeded: %s", l)
		}
	}
	for _, c := range cs1 {
		r, ok, err := st.Latest(ctx, c.User, c.Model, c.K, ledger.Crypto)
		if err != nil || !ok {
			t.Fatalf("user %s: %v %v", c.User, ok, err)
		}
		if r.Seeded {
			t.Errorf("user %s: a seeded release came back to a private lookup", c.User)
		}
	}
	// Re-applying the first private run's charges returns its own lists.
	res, err := ApplyCharges(ctx, dsn, filepath.Join(dir, "p1.charges"), math.Inf(1), "", filepath.Join(dir, "again.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Fresh != 0 || res.Again != len(cs1) {
		t.Errorf("re-applying the private charges: %+v", res)
	}
	for i, l := range readLines(t, filepath.Join(dir, "again.jsonl")) {
		var r RecLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Seeded || !slices.Equal(r.Recommendations, lines1[i].Recommendations) || r.Cost != 0 {
			t.Errorf("re-served line %d: %s, want the private list %q at cost 0", i+1, l, lines1[i].Recommendations)
		}
	}
	st.Close()
}
