package pipeline

import (
	"context"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dplp/dplp/ledger"
)

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	gp := filepath.Join(dir, "g")
	os.WriteFile(gp, []byte("a b\nb c\nc d\n"), 0o644)
	mb, err := os.ReadFile(writeModel(t, dir, "pa", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, s := beam.NewPipelineWithRoot()
	if _, err := Build(s, Config{Graph: gp, Model: mb, K: 2, Seed: seedp(1), Out: filepath.Join(dir, "o")}); err == nil || !strings.Contains(err.Error(), "supports cn, aa, ra and jc") {
		t.Fatalf("pa model: %v", err)
	}
	// dplp-list models are released with evidence cn (any score) or jc
	// (score jc); other evidence scores are refused at build time.
	for _, c := range []struct {
		score, evidence string
		ok              bool
	}{
		{"cn", "cn", true}, {"aa", "cn", true}, {"ra", "cn", true}, {"jc", "cn", true}, {"jc", "jc", true},
		{"aa", "aa", false}, {"ra", "ra", false}, {"cn", "jc", false}, {"cn", "pa", false},
	} {
		lm, err := model.CompileList(c.score, privunit.Pair, model.ListSpec{Eps: 1, Evidence: c.evidence, Combine: list.Combine{W: 1, Post: true, Rho: 0.1, A: 0.3}, FitK: 30, PubScale: 1, EvScale: 1}, model.Info{Score: c.score})
		if err != nil {
			t.Fatal(err)
		}
		lp := filepath.Join(dir, "list.json")
		if err := model.Save(lp, lm); err != nil {
			t.Fatal(err)
		}
		lb, _ := os.ReadFile(lp)
		_, s := beam.NewPipelineWithRoot()
		_, err = Build(s, Config{Graph: gp, Model: lb, K: 2, Seed: seedp(1), Out: filepath.Join(dir, "o")})
		if c.ok && err != nil || !c.ok && (err == nil || !strings.Contains(err.Error(), "the Beam pipeline releases evidence cn")) {
			t.Errorf("dplp-list %s with evidence %s: %v", c.score, c.evidence, err)
		}
	}
	mb, err = os.ReadFile(writeModel(t, dir, "cn", 1))
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "selfloops")
	os.WriteFile(sp, []byte("# only self-loops\na a\nb b\n"), 0o644)
	p, s := beam.NewPipelineWithRoot()
	if _, err := Build(s, Config{Graph: sp, Model: mb, K: 2, Seed: seedp(1), Out: filepath.Join(dir, "o")}); err != nil {
		t.Fatal(err)
	}
	if err := ptest.Run(p); err == nil || !strings.Contains(err.Error(), "empty graph") {
		t.Errorf("self-loops only: got %v", err)
	}
	// Build-time refusals: a private run (no seed) writes no uncharged
	// lists file and needs the charges file.
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"private with a lists file", Config{Graph: gp, Model: mb, K: 2, Out: filepath.Join(dir, "o"), Charges: filepath.Join(dir, "c")}, "writes no uncharged lists"},
		{"private without charges", Config{Graph: gp, Model: mb, K: 2}, "needs the charges file"},
		{"seeded without outputs", Config{Graph: gp, Model: mb, K: 2, Seed: seedp(1)}, "output path is required"},
		{"no graph", Config{Model: mb, K: 2, Seed: seedp(1), Out: filepath.Join(dir, "o")}, "graph is required"},
		{"k 0", Config{Graph: gp, Model: mb, K: 0, Seed: seedp(1), Out: filepath.Join(dir, "o")}, "k must be >= 1"},
	} {
		_, s := beam.NewPipelineWithRoot()
		if _, err := Build(s, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Run-time refusals, naming the file and line.
	np := filepath.Join(dir, "nodes")
	for _, c := range []struct{ marks, nodes, want string }{
		{"a b\nc c\n", "", `m:2: node "c" cannot protect a pair with itself`},
		{"", "# nodes\nx\ny z\n", `nodes:3: expected one node label, found 2 fields`},
	} {
		mp := ""
		if c.marks != "" {
			mp = filepath.Join(dir, "m")
			os.WriteFile(mp, []byte(c.marks), 0o644)
		}
		nodes := ""
		if c.nodes != "" {
			nodes = np
			os.WriteFile(np, []byte(c.nodes), 0o644)
		}
		p, s := beam.NewPipelineWithRoot()
		if _, err := Build(s, Config{Graph: gp, Protected: mp, Nodes: nodes, Model: mb, K: 2, Seed: seedp(1), Out: filepath.Join(dir, "o")}); err != nil {
			t.Fatal(err)
		}
		if err := ptest.Run(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("marks %q nodes %q: got %v, want an error containing %s", c.marks, c.nodes, err, c.want)
		}
	}
}

// Applying the same charges file twice charges every user once (the keys
// are run:<run-id>:<user>), and the second pass reports the stored lists at
// no cost.
func TestChargesIdempotent(t *testing.T) {
	dir := t.TempDir()
	gp, mp := filepath.Join(dir, "g"), filepath.Join(dir, "m")
	os.WriteFile(gp, []byte("a b\nb c\nc d\nd a\na e\ne f\nf b\n"), 0o644)
	os.WriteFile(mp, []byte("a b\nc e\n"), 0o644)
	mb, err := os.ReadFile(writeModel(t, dir, "aa", 0.5))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "lists.uncharged")
	runBeam(t, Config{Graph: gp, Protected: mp, Model: mb, K: 3, Seed: seedp(9), Out: out, Charges: out + ".charges", RunID: "r1"})
	want := readLines(t, out)
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(dir, "ledger.db")
	final := filepath.Join(dir, "lists")
	res, err := ApplyCharges(ctx, dsn, out+".charges", 1e9, out, final)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fresh != len(want) || res.Again != 0 {
		t.Fatalf("first apply: %+v", res)
	}
	if got := readLines(t, final); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("charged lists differ from the pipeline's:\n%q\n%q", got, want)
	}
	res2, err := ApplyCharges(ctx, dsn, out+".charges", 1e9, out, final)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Fresh != 0 || res2.Again != len(want) || res2.Spent != 0 {
		t.Fatalf("second apply charged again: %+v", res2)
	}
	st, err := ledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs, err := ReadCharges(ctx, out+".charges")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if !c.Seeded {
			t.Errorf("user %s: a seeded run's charge is not marked seeded", c.User)
		}
		r, ok, err := st.Latest(ctx, c.User, c.Model, c.K, ledger.Seeded)
		if err != nil || !ok {
			t.Fatalf("user %s: %v %v", c.User, ok, err)
		}
		if r.Cost != c.Cost || strings.Join(r.List, " ") != strings.Join(c.List, " ") {
			t.Errorf("user %s: stored %v %v, charge %v %v", c.User, r.Cost, r.List, c.Cost, c.List)
		}
	}
}
