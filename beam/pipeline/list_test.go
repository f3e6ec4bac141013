package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

func init() { beam.RegisterType(reflect.TypeOf(dumpL1Fn{})) }

// posterior is list.DefaultPosterior's family (what dplp train fits).
var posterior = list.Combine{W: 1, Post: true, Rho: 0.2, A: 0.3}

// writeListModel saves a dplp-list model (model.CompileList) with
// meta.data = data.
func writeListModel(t *testing.T, dir, score string, unit privunit.Unit, evidence string, eps float64, c list.Combine, data string) string {
	t.Helper()
	m, err := model.CompileList(score, unit, model.ListSpec{Eps: eps, Evidence: evidence, Combine: c, Rho: c.Rho, FitK: 10, PubScale: 1, EvScale: 1}, model.Info{Score: score})
	if err != nil {
		t.Fatal(err)
	}
	m.Meta.Data = data
	path := filepath.Join(dir, fmt.Sprintf("list-%s-%s-%s-%g-%v.json", score, evidence, unit, eps, c.Post))
	if err := model.Save(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// singleList is the single-machine release of a dplp-list model, as
// `dplp recommend --all --seed N --format jsonl` writes it: release.New
// with release.WithSeed, users in label byte order, recommend's dplp-list
// line (eps_p 0, the unit and eps per list).
func singleList(t *testing.T, graphPath, marksPath, nodesPath, modelPath string, k int, seed uint64) []string {
	t.Helper()
	g, p := loadRef(t, graphPath, marksPath, nodesPath)
	m, err := model.Load(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := release.New(m, g, p, release.WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.ListLevel() {
		t.Fatal("not a list-level recommender")
	}
	var out []string
	err = rec.Stream(context.Background(), g.ByLabel(), k, func(_ int, r release.Result) error {
		line, err := RenderListLine(r.User, r.List, r.K, r.Cost, r.Seeded, rec.Unit().String(), rec.EpsList())
		out = append(out, line)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The dplp-list line is recommend's, byte for byte: keys in recLine's
// order, eps_p 0, then "unit" and "eps_list", strings escaped as
// encoding/json escapes them (recommend's encoder is tested against
// encoding/json). Compare a line `dplp recommend --all --seed 42 --format
// jsonl` wrote for a dplp-list model:
// {"user":"0","recommendations":["6","112","19","11","32"],"k":5,"eps_p":0,"cost":1,"seeded":true,"unit":"pair","eps_list":1}
func TestRenderListLine(t *testing.T) {
	got, err := RenderListLine("u<1>", []string{"b", "é"}, 5, 0.5, true, "pair", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"user":"u\u003c1\u003e","recommendations":["b","é"],"k":5,"eps_p":0,"cost":0.5,"seeded":true,"unit":"pair","eps_list":0.5}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, _ = RenderListLine("u", nil, 5, 0, false, "party", 2)
	if want := `{"user":"u","recommendations":[],"k":5,"eps_p":0,"cost":0,"seeded":false,"unit":"party","eps_list":2}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Seeded Beam output of a dplp-list model equals the single-machine
// release byte for byte, under both units, for every evidence the
// pipeline releases (cn for cn/aa/ra/jc, jc for jc), both combination
// families, tiny input shards and salting blocks, hubs, marked non-edges,
// a node list, and several output shards.
func TestBeamListEqualsSingleMachine(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(31, 32))
	me, mm := mixedGraph(rng, 150, 500)
	he, hm := hubGraph(rng, 300, 400, 3)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type graphCase struct {
		edges, marks string
		shardBytes   int64
		hubChunk     int
	}
	// dense: user 0 is adjacent to 1..30 and reaches 31..34 by wedges, so
	// its zero block is 35..38 (4 x 8 < 39 nodes): a list of 8 takes
	// zero-block members from the ascending list (release's mapList), where
	// the other users' large blocks are drawn by rejection.
	var dense strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&dense, "0 %d\n%d %d\n", i, i, i%30+1)
	}
	dense.WriteString("31 1\n31 5\n32 9\n33 13\n34 20\n34 21\n35 36\n37 38\n")
	graphs := []graphCase{
		{write("mixed.txt", me), write("mixed.marks", mm), 700, 0},
		{write("hubs.txt", he), write("hubs.marks", hm), 1 << 20, 16},
		{write("dense.txt", dense.String()), write("dense.marks", "0 1\n0 2\n5 31\n9 32\n1 2\n35 36\n10 11\n3 34\n"), 40, 2},
	}
	nodes := write("nodes", "iso-a\nuser-1\n99999\n")
	threshold := list.Combine{W: 1, T: 0.5}
	cases := []struct {
		graph         int
		score, ev     string
		unit          privunit.Unit
		eps           float64
		c             list.Combine
		k             int
		seed          uint64
		shards        int
		withNodes     bool
		wantNoisyMost bool
	}{
		{0, "cn", "cn", privunit.Pair, 1, posterior, 5, 1, 1, false, true},
		{0, "cn", "cn", privunit.Party, 0.5, posterior, 4, 2, 1, true, true},
		{0, "aa", "cn", privunit.Pair, 2, posterior, 6, 3, 1, false, true},
		{0, "ra", "cn", privunit.Party, 1, posterior, 3, 4, 1, false, true},
		{0, "jc", "jc", privunit.Pair, 1, posterior, 5, 5, 1, false, true},
		{0, "jc", "jc", privunit.Party, 4, posterior, 5, 6, 1, true, true},
		{0, "cn", "cn", privunit.Party, 1, threshold, 5, 7, 1, false, true},
		{0, "jc", "cn", privunit.Pair, 1, posterior, 4, 8, 1, false, true},
		{1, "aa", "cn", privunit.Party, 1, posterior, 8, 9, 3, false, true},
		{1, "jc", "jc", privunit.Party, 0.5, threshold, 5, 10, 1, false, true},
		{0, "cn", "cn", privunit.Pair, 3, list.Combine{}, 5, 11, 1, false, false}, // W = 0: public-only, cost 0
		{2, "cn", "cn", privunit.Pair, 1, posterior, 8, 12, 1, false, true},
		{2, "aa", "cn", privunit.Party, 2, threshold, 8, 13, 1, false, true},
	}
	for i, c := range cases {
		gc := graphs[c.graph]
		name := fmt.Sprintf("%d-%s-ev%s-%s-post%v", i, c.score, c.ev, c.unit, c.c.Post)
		t.Run(name, func(t *testing.T) {
			modelPath := writeListModel(t, dir, c.score, c.unit, c.ev, c.eps, c.c, "")
			np := ""
			if c.withNodes {
				np = nodes
			}
			want := singleList(t, gc.edges, gc.marks, np, modelPath, c.k, c.seed)
			mb, err := os.ReadFile(modelPath)
			if err != nil {
				t.Fatal(err)
			}
			old := ShardBytes
			ShardBytes = gc.shardBytes
			defer func() { ShardBytes = old }()
			out := filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", i))
			runBeam(t, Config{Graph: gc.edges, Protected: gc.marks, Nodes: np, Model: mb, K: c.k, Seed: seedp(c.seed), Out: out,
				Charges: out + ".charges", RunID: "test", HubChunk: gc.hubChunk, OutShards: c.shards})
			var got, charges []string
			for j := range max(c.shards, 1) {
				got = append(got, readLines(t, ShardName(out, j, c.shards))...)
				charges = append(charges, readLines(t, ShardName(out+".charges", j, c.shards))...)
			}
			if len(got) != len(want) {
				t.Fatalf("beam wrote %d lines, single machine %d", len(got), len(want))
			}
			diff := 0
			for j := range want {
				if got[j] != want[j] {
					if diff < 5 {
						t.Errorf("line %d:\n beam   %s\n single %s", j+1, got[j], want[j])
					}
					diff++
				}
			}
			if diff > 0 {
				t.Fatalf("%d of %d lines differ", diff, len(want))
			}
			// Charges: one per list, the list's cost (eps or 0) with the
			// model's unit, eps_p the eps per list.
			noisy := 0
			for j, l := range charges {
				var ch Charge
				if err := json.Unmarshal([]byte(l), &ch); err != nil {
					t.Fatal(err)
				}
				var line RecLine
				json.Unmarshal([]byte(got[j]), &line)
				if ch.Unit != c.unit.String() || ch.EpsP != c.eps || ch.Cost != line.Cost || !ch.Seeded ||
					(ch.Cost != 0 && ch.Cost != c.eps) || ch.Rho != accountant.PureList(ch.Cost).Rho {
					t.Fatalf("charge %s for line %s", l, got[j])
				}
				if ch.Cost > 0 {
					noisy++
					if len(ch.Influencers) == 0 {
						t.Errorf("user %s: a list that reads evidence has no influencers", ch.User)
					}
				} else if len(ch.Influencers) != 0 {
					t.Errorf("user %s: a free list has influencers %v", ch.User, ch.Influencers)
				}
			}
			if c.wantNoisyMost && noisy*2 < len(want) {
				t.Errorf("only %d of %d lists read evidence: the test checks little of the noise", noisy, len(want))
			}
			if !c.wantNoisyMost && noisy != 0 {
				t.Errorf("%d lists of a public-only model were charged", noisy)
			}
			t.Logf("%d users, %d lists charged eps %g", len(want), noisy, c.eps)
		})
	}
}

// dumpL1Fn writes each user's L1(u) as the list release computes it.
type dumpL1Fn struct {
	Kind, Ev, Unit int
}

func (f *dumpL1Fn) ProcessElement(u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, partners func(*int32) bool, n int, hist func(*int32, *int) bool, emit func(Final)) error {
	levels, pairs := levelsOf(hist)
	var evc [][2]int32
	nd, _, _, l1, err := userL1(score.Kind(f.Kind), score.Kind(f.Ev), privunit.Unit(f.Unit), u, nodes, cands, sens, partners, n, levels, pairs, &evc)
	if err != nil {
		return err
	}
	emit(Final{U: u, Line: nd.Label + " " + strconv.FormatFloat(l1, 'g', -1, 64)})
	return nil
}

// Each user's L1(u) equals score.Scorer.Evidence(u, unit).L1 of the
// evidence scorer, exactly, for CN and JC under both units, with tiny
// shards and salting blocks; the graphs have users with 0, 1 and several
// pairs through one party, and marks on hubs.
func TestListL1EqualsEvidence(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(41, 42))
	me, mm := mixedGraph(rng, 80, 300)
	he, hm := hubGraph(rng, 120, 150, 2)
	for gi, gr := range [][2]string{{me, mm}, {he, hm}} {
		gp, mp := filepath.Join(dir, fmt.Sprintf("g%d", gi)), filepath.Join(dir, fmt.Sprintf("m%d", gi))
		if err := os.WriteFile(gp, []byte(gr[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mp, []byte(gr[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		g, p := loadRef(t, gp, mp, "")
		for _, ev := range []score.Kind{score.CN, score.JC} {
			for _, unit := range []privunit.Unit{privunit.Pair, privunit.Party} {
				t.Run(fmt.Sprintf("g%d-%s-%s", gi, ev, unit), func(t *testing.T) {
					out := filepath.Join(dir, "l1")
					pl, s := beam.NewPipelineWithRoot()
					edgeLines := ReadPairs(s.Scope("Edges"), gp)
					markLines := ReadPairs(s.Scope("Marks"), mp)
					ids := NodeIDs(s, Labels(s.Scope("Edges"), edgeLines), Labels(s.Scope("Marks"), markLines))
					n := stats.CountElms(s, ids)
					edges := Resolve(s.Scope("Edges"), gp, false, ids, edgeLines)
					marks := Resolve(s.Scope("Marks"), mp, true, ids, markLines)
					nodes := Nodes(s, beam.ParDo(s, swapLabel, ids), edges, marks)
					cands := Candidates(s, score.CN, 3, nodes)
					sens := Sensitivities(s, 3, true, nodes)
					j, levels := listInputs(s, unit, ev, nodes, cands, sens)
					Write(s, out, "", 1, n, beam.ParDo(s, &dumpL1Fn{Kind: int(score.CN), Ev: int(ev), Unit: int(unit)}, j, beam.SideInput{Input: n}, beam.SideInput{Input: levels}))
					if err := ptest.Run(pl); err != nil {
						t.Fatal(err)
					}
					sc, err := score.New(g, p, ev)
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]string{}
					for _, l := range readLines(t, out) {
						i := strings.LastIndexByte(l, ' ')
						got[l[:i]] = l[i+1:]
					}
					bad, distinct := 0, map[float64]bool{}
					for u := range g.N() {
						want := sc.Evidence(int32(u), unit).L1
						distinct[want] = true
						if gl := got[g.Label(int32(u))]; gl != strconv.FormatFloat(want, 'g', -1, 64) {
							if bad < 5 {
								t.Errorf("user %d: L1 %s, Evidence %v", u, gl, want)
							}
							bad++
						}
					}
					if bad > 0 {
						t.Fatalf("%d of %d users differ", bad, g.N())
					}
					if len(distinct) < 2 {
						t.Errorf("every user has L1 %v: the test checks little", distinct)
					}
				})
			}
		}
	}
}

// A private run of a dplp-list model writes only the charges file;
// ApplyCharges writes dplp-list lines (eps_p 0, the unit and eps per list,
// "seeded":false), each charged once, 0 or the model's eps whatever K, and
// the ledger records the unit; the lines' costs sum to the ledger's spend.
func TestPrivateListRelease(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(51, 52))
	edges, marks := mixedGraph(rng, 60, 220)
	gp, mp := filepath.Join(dir, "g"), filepath.Join(dir, "m")
	if err := os.WriteFile(gp, []byte(edges), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, []byte(marks), 0o644); err != nil {
		t.Fatal(err)
	}
	g, prot := loadRef(t, gp, mp, "")
	cnEv, err := score.New(g, prot, score.CN)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(dir, "ledger.db")
	st, err := ledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spentTotal := 0.0
	for i, c := range []struct {
		score, ev string
		unit      privunit.Unit
		eps       float64
		k         int
	}{
		{"aa", "cn", privunit.Pair, 0.5, 4},
		{"jc", "jc", privunit.Party, 1, 7},
	} {
		mb, err := os.ReadFile(writeListModel(t, dir, c.score, c.unit, c.ev, c.eps, posterior, ""))
		if err != nil {
			t.Fatal(err)
		}
		run := fmt.Sprintf("p%d", i)
		ch := filepath.Join(dir, run+".charges")
		out := filepath.Join(dir, run+".jsonl")
		runBeam(t, Config{Graph: gp, Protected: mp, Model: mb, K: c.k, Charges: ch, RunID: run})
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
		lines := readLines(t, out)
		if len(lines) != g.N() {
			t.Fatalf("%d lines for %d users", len(lines), g.N())
		}
		spent, noisy := 0.0, 0
		for j, l := range lines {
			var r RecLine
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			suffix := fmt.Sprintf(`,"seeded":false,"unit":"%s","eps_list":%g}`, c.unit, c.eps)
			if !strings.HasSuffix(l, suffix) || r.EpsP != 0 {
				t.Errorf("line %s: want eps_p 0 and the suffix %s", l, suffix)
			}
			if r.Cost != 0 && r.Cost != c.eps {
				t.Errorf("user %s: cost %v, want 0 or the eps per list %v", r.User, r.Cost, c.eps)
			}
			if cs[j].User != r.User || !slices.Equal(cs[j].List, r.Recommendations) || cs[j].Cost != r.Cost || cs[j].Unit != c.unit.String() || cs[j].Seeded {
				t.Errorf("line %d (%s) differs from its charge %+v", j+1, r.User, cs[j])
			}
			u, _ := g.ID(r.User)
			seen := map[string]bool{}
			for _, v := range r.Recommendations {
				vid, ok := g.ID(v)
				if !ok || vid == u || g.HasEdge(u, vid) || seen[v] {
					t.Errorf("user %s: invalid recommendation %q in %q", r.User, v, r.Recommendations)
				}
				seen[v] = true
			}
			if len(r.Recommendations) != min(c.k, g.N()-1-g.Degree(u)) {
				t.Errorf("user %s: %d recommendations, want %d", r.User, len(r.Recommendations), min(c.k, g.N()-1-g.Degree(u)))
			}
			rel, ok, err := st.Latest(ctx, r.User, cs[j].Model, c.k, ledger.Crypto)
			if err != nil || !ok {
				t.Fatalf("user %s: %v %v", r.User, ok, err)
			}
			if rel.Unit != c.unit || rel.Cost != r.Cost || rel.EpsP != c.eps || rel.Seeded {
				t.Errorf("user %s: stored unit %v cost %v eps_p %v seeded %v; want %v %v %v false", r.User, rel.Unit, rel.Cost, rel.EpsP, rel.Seeded, c.unit, r.Cost, c.eps)
			}
			// The party-unit cost, as the single machine records it:
			// eps x L1_party(u)/L1_pair(u) for a pair-unit list with
			// evidence cn, the cost otherwise.
			wantParty := r.Cost
			if c.unit == privunit.Pair && r.Cost > 0 {
				wantParty = r.Cost * max(1, cnEv.Evidence(u, privunit.Party).L1/cnEv.Evidence(u, privunit.Pair).L1)
			}
			if math.Abs(rel.PartyCost-wantParty) > 1e-9*wantParty {
				t.Errorf("user %s: stored party cost %v, want %v", r.User, rel.PartyCost, wantParty)
			}
			spent += r.Cost
			if r.Cost > 0 {
				noisy++
			}
		}
		if noisy == 0 {
			t.Fatalf("%s: no list read evidence: the test checks nothing about the noise", run)
		}
		spentTotal += spent
		us, err := st.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, u := range us {
			total += u.Spent
		}
		if math.Abs(total-spentTotal) > 1e-9 {
			t.Errorf("%s: lines cost %v in all, the ledger recorded %v", run, spentTotal, total)
		}
		t.Logf("%s: %d users, %d lists charged %g", run, g.N(), noisy, c.eps)
	}
}
