package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
)

// listFixture writes a 300-node BA graph with 30% of its edges marked.
func listFixture(t *testing.T) (dir, g, marks string) {
	t.Helper()
	dir = t.TempDir()
	g, marks = filepath.Join(dir, "g.txt"), filepath.Join(dir, "marks.txt")
	if _, stderr, err := run(t, "gen", "ba", "--n", "300", "--m", "3", "--seed", "2", "--out", g); err != nil {
		t.Fatalf("gen: %v %s", err, stderr)
	}
	if _, stderr, err := run(t, "gen", "marks", "--graph", g, "--sigma", "0.3", "--seed", "3", "--out", marks); err != nil {
		t.Fatalf("marks: %v %s", err, stderr)
	}
	return dir, g, marks
}

// A pair-unit dplp-list model trains, records its unit, eps per list,
// combination and data fingerprint, and recommends: every list costs eps
// (or 0) whatever K, JSONL lines and ledger rows carry the unit, ledger
// show reports spending per unit, and seeded runs are byte-identical and
// marked seeded.
func TestListModelTrainRecommend(t *testing.T) {
	dir, g, marks := listFixture(t)
	mp := filepath.Join(dir, "list.json")
	out, stderr, err := run(t, "train", "--graph", g, "--protected", marks, "--score", "aa", "--variant", "dplp-list", "--unit", "pair", "--eps", "1", "--out", mp)
	if err != nil {
		t.Fatalf("train: %v %s", err, stderr)
	}
	if !strings.Contains(out, "unit pair, eps 1 per list") {
		t.Fatalf("train output: %s", out)
	}
	m, err := model.Load(mp)
	if err != nil {
		t.Fatal(err)
	}
	if m.Variant != model.VariantList || m.PrivacyUnit() != privunit.Pair || m.List == nil || m.List.Eps != 1 || m.List.Evidence != "cn" || m.Meta.Data == "" || m.EpsP != 0 {
		t.Fatalf("model %+v list %+v", m, m.List)
	}
	if m.List.Combine.W == 0 {
		t.Fatal("the fit vetoed the evidence on the fixture: the cost checks below would not discriminate")
	}
	store := "sqlite:" + filepath.Join(dir, "ledger.db")
	costs := map[string][]float64{}
	for _, k := range []string{"5", "30"} {
		out, stderr, err := run(t, "recommend", "--model", mp, "--graph", g, "--protected", marks, "--all", "--k", k, "--fresh", "--format", "jsonl", "--store", store, "--create")
		if err != nil {
			t.Fatalf("recommend k=%s: %v %s", k, err, stderr)
		}
		if !strings.Contains(stderr, "pair unit") || !strings.Contains(stderr, "eps 1 per fresh list whatever K") {
			t.Fatalf("header: %s", stderr)
		}
		for _, l := range jsonlLines(t, out) {
			if l.Unit != "pair" || l.EpsList != 1 || (l.Cost != 0 && l.Cost != 1) || l.Seeded {
				t.Fatalf("k=%s line %+v", k, l)
			}
			costs[l.User] = append(costs[l.User], l.Cost)
		}
	}
	noisy := 0
	for u, c := range costs {
		if len(c) != 2 || c[0] != c[1] {
			t.Fatalf("user %s: costs %v at K = 5 and 30", u, c)
		}
		if c[0] > 0 {
			noisy++
		}
	}
	if noisy == 0 {
		t.Fatal("no list read the evidence")
	}
	st, err := ledger.OpenWith(context.Background(), store, ledger.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := m.ID()
	rel, ok, err := st.Latest(context.Background(), "0", id, 30, ledger.Crypto)
	st.Close()
	if err != nil || !ok || rel.Unit != privunit.Pair || rel.EpsP != 1 {
		t.Fatalf("ledger row %+v %v %v", rel, ok, err)
	}
	out, _, err = run(t, "ledger", "show", "--store", store, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var show ledgerShowJSON
	if err := json.Unmarshal([]byte(out), &show); err != nil || len(show.ByUnit) != 1 || show.ByUnit[0].Unit != "pair" || show.ByUnit[0].Releases != 600 {
		t.Fatalf("ledger show: %s %v", out, err)
	}
	// CSV carries the unit column.
	out, _, err = run(t, "recommend", "--model", mp, "--graph", g, "--protected", marks, "--user", "0", "--k", "3", "--format", "csv", "--store", store)
	if err != nil || !strings.HasPrefix(out, "user,rank,candidate,eps_p,k,cost,seeded,unit\n") || !strings.Contains(out, ",pair\n") {
		t.Fatalf("csv: %q %v", out, err)
	}
	// Seeded: byte-identical across runs (separate stores), marked seeded.
	seeded := func(name string) string {
		out, stderr, err := run(t, "recommend", "--model", mp, "--graph", g, "--protected", marks, "--all", "--k", "10", "--seed", "4", "--format", "jsonl", "--store", "sqlite:"+filepath.Join(dir, name), "--create")
		if err != nil || !strings.Contains(stderr, "SEEDED") || !strings.Contains(stderr, "NO privacy guarantee") {
			t.Fatalf("seeded run: %v %s", err, stderr)
		}
		for _, l := range jsonlLines(t, out) {
			if !l.Seeded || l.Unit != "pair" {
				t.Fatalf("seeded line %+v", l)
			}
		}
		return out
	}
	if a, b := seeded("s1.db"), seeded("s2.db"); a != b {
		t.Fatal("seeded dplp-list runs differ")
	}
}

// train refuses the combinations it cannot honour; the valid dplp-list
// call above is the positive control.
func TestTrainUnitRefusals(t *testing.T) {
	dir, g, marks := listFixture(t)
	out := filepath.Join(dir, "m.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"per-pick pair unit", []string{"--score", "aa", "--variant", "dplp", "--unit", "pair", "--eps", "1"}, "calibrated to the party unit"},
		{"dplp-pub pair unit", []string{"--score", "cn", "--variant", "dplp-pub", "--unit", "pair", "--eps", "1"}, "calibrated to the party unit"},
		{"unknown unit", []string{"--score", "aa", "--variant", "dplp-list", "--unit", "node", "--eps", "1"}, "--unit"},
		{"embedding list", []string{"--score", "node2vec", "--variant", "dplp-list", "--eps", "1"}, "triad score"},
		{"eps 0", []string{"--score", "aa", "--variant", "dplp-list", "--eps", "0"}, "eps"},
		{"fit-k 0", []string{"--score", "aa", "--variant", "dplp-list", "--eps", "1", "--fit-k", "0"}, "--fit-k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"train", "--graph", g, "--protected", marks, "--out", out, "--epochs", "1"}, tc.args...)
			if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("a refused training wrote a model")
			}
		})
	}
	// A per-pick model records unit party.
	if _, stderr, err := run(t, "train", "--graph", g, "--protected", marks, "--out", out, "--epochs", "1", "--score", "cn", "--variant", "dplp", "--unit", "party", "--eps", "1"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if m, err := model.Load(out); err != nil || m.Unit != "party" {
		t.Fatalf("per-pick model unit: %+v %v", m, err)
	}
}

// A model file written before units loads unchanged: no unit (party), its
// stored checksum still verifies, and saving it again writes the same
// checksum (the new fields are omitted when empty).
func TestOldModelLoadsUnchanged(t *testing.T) {
	const path = "../../../../model/testdata/dplp-before-rawconfig.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Unit != "" || m.PrivacyUnit() != privunit.Party || m.ListLevel() {
		t.Fatalf("old model: unit %q list %v", m.Unit, m.ListLevel())
	}
	if id, _ := m.ID(); id != "model:"+env.SHA256[:16] {
		t.Fatalf("id %s, file checksum %s", id, env.SHA256)
	}
	p2 := filepath.Join(t.TempDir(), "m.json")
	if err := model.Save(p2, m); err != nil {
		t.Fatal(err)
	}
	raw2, _ := os.ReadFile(p2)
	if err := json.Unmarshal(raw2, &env); err != nil || "model:"+env.SHA256[:16] != func() string { id, _ := m.ID(); return id }() {
		t.Fatalf("re-saved checksum %s", env.SHA256)
	}
	if strings.Contains(string(raw2), `"unit"`) || strings.Contains(string(raw2), `"list"`) {
		t.Fatal("re-saved old model gained unit or list fields")
	}
}

// recommend's hand-written JSONL line matches encoding/json with and
// without the dplp-list fields; per-pick lines carry neither.
func TestRecLineUnitJSON(t *testing.T) {
	for _, l := range []recLine{
		{User: "u", Recommendations: []string{"a"}, K: 5, EpsP: 0.5, Cost: 2.5},
		{User: "u", Recommendations: []string{}, K: 30, Cost: 1, Unit: "pair", EpsList: 1},
		{User: "v", Recommendations: []string{"b", "c"}, K: 2, Cost: 0, Seeded: true, Unit: "party", EpsList: 0.25},
	} {
		want, _ := json.Marshal(l)
		if got := l.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("appendJSON %s, encoding/json %s", got, want)
		}
		if (l.Unit == "") == strings.Contains(string(want), `"unit"`) {
			t.Fatalf("unit field presence wrong: %s", want)
		}
	}
}

// dplp audit --mechanism runs the list-level audit under both units and
// passes; an unknown mechanism is an error.
func TestAuditListMechanisms(t *testing.T) {
	out, _, err := run(t, "audit", "--mechanism", "dplp-list,perturb-once", "--graphs", "3", "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var rep listAuditJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Checks == 0 || rep.Violations != 0 || rep.Controls == 0 || rep.ControlsCaught != rep.Controls {
		t.Fatalf("report %+v %v", rep, err)
	}
	units := map[string]bool{}
	for _, r := range rep.Reports {
		units[r.Unit] = true
	}
	if !units["pair"] || !units["party"] {
		t.Fatalf("units audited: %v", units)
	}
	if _, _, err := run(t, "audit", "--mechanism", "laplace-list"); err == nil {
		t.Fatal("unknown mechanism accepted")
	}
}

// bench sample --model times a dplp-list model's release path (every
// user's list; a profile when asked), and refuses a --score other than the
// model's.
func TestBenchSampleModel(t *testing.T) {
	dir, g, marks := listFixture(t)
	mp := filepath.Join(dir, "list.json")
	if _, stderr, err := run(t, "train", "--graph", g, "--protected", marks, "--score", "cn", "--variant", "dplp-list", "--unit", "pair", "--eps", "1", "--out", mp); err != nil {
		t.Fatalf("train: %v %s", err, stderr)
	}
	prof := filepath.Join(dir, "cpu.prof")
	out, stderr, err := run(t, "bench", "sample", "--graph", g, "--protected", marks, "--model", mp, "--json", "--cpuprofile", prof)
	if err != nil {
		t.Fatalf("bench sample: %v %s", err, stderr)
	}
	var res struct {
		Queries    int   `json:"queries"`
		Candidates int64 `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Queries != 300 || res.Candidates <= 0 {
		t.Fatalf("result %+v", res)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("profile: %v", err)
	}
	if _, _, err := run(t, "bench", "sample", "--graph", g, "--protected", marks, "--model", mp, "--score", "aa"); err == nil || !strings.Contains(err.Error(), "differs from the model's score") {
		t.Fatalf("--score aa with a cn model: %v", err)
	}
	// --crypto: the deployment path's noise, no ledger needed (the lists
	// are discarded); not with a seed.
	out, stderr, err = run(t, "bench", "sample", "--graph", g, "--protected", marks, "--score", "aa", "--sampler", "exact", "--crypto", "--json")
	if err != nil {
		t.Fatalf("bench sample --crypto: %v %s", err, stderr)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Queries != 300 || res.Candidates <= 0 {
		t.Fatalf("--crypto: result %+v (%v): %s", res, err, out)
	}
	if !strings.Contains(stderr, "crypto-seeded generator") {
		t.Fatalf("--crypto: noise not reported as crypto-seeded: %s", stderr)
	}
	if _, _, err := run(t, "bench", "sample", "--graph", g, "--protected", marks, "--score", "aa", "--crypto", "--seed", "3"); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("--crypto with --seed: %v", err)
	}
}

// --user-budget-party caps pair-unit dplp-list lists under the party unit:
// recommend refuses the users whose list's party-unit cost (eps x
// L1_party/L1_pair) exceeds it, although --user-budget (none) allows them;
// ledger show reports the party-unit totals and ledger verify checks them.
// The uncapped run is the control: some lists cost more than eps under the
// party unit, and exactly those are refused under the cap.
func TestListModelPartyBudget(t *testing.T) {
	dir, g, marks := listFixture(t)
	mp := filepath.Join(dir, "list.json")
	if _, stderr, err := run(t, "train", "--graph", g, "--protected", marks, "--score", "aa", "--variant", "dplp-list", "--unit", "pair", "--eps", "1", "--out", mp); err != nil {
		t.Fatalf("train: %v %s", err, stderr)
	}
	show := func(store string) ledgerShowJSON {
		t.Helper()
		out, _, err := run(t, "ledger", "show", "--store", store, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var s ledgerShowJSON
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if _, _, err := run(t, "ledger", "verify", "--store", store); err != nil {
			t.Fatalf("verify %s: %v", store, err)
		}
		return s
	}
	const capP = 1.5
	var within, above int
	for _, tc := range []struct {
		name  string
		extra []string
	}{{"uncapped", nil}, {"capped", []string{"--user-budget-party", "1.5"}}} {
		store := "sqlite:" + filepath.Join(dir, tc.name+".db")
		args := append([]string{"recommend", "--model", mp, "--graph", g, "--protected", marks, "--all", "--k", "5", "--format", "jsonl", "--store", store, "--create"}, tc.extra...)
		_, stderr, err := run(t, args...)
		s := show(store)
		if len(s.ByUnit) != 1 || s.ByUnit[0].Unit != "pair" || s.ByUnit[0].PartyUnbounded != 0 || !(s.ByUnit[0].PartySpent >= s.ByUnit[0].Spent) {
			t.Fatalf("%s: by_unit %+v", tc.name, s.ByUnit)
		}
		switch tc.name {
		case "uncapped":
			if err != nil {
				t.Fatalf("uncapped: %v %s", err, stderr)
			}
			for _, u := range s.Users {
				if u.PartySpent == nil || u.PartyUnbounded == nil || *u.PartyUnbounded != 0 || *u.PartySpent < u.Spent {
					t.Fatalf("user %+v", u)
				}
				if *u.PartySpent > capP {
					above++
				} else {
					within++
				}
			}
			if above == 0 || within == 0 {
				t.Fatalf("%d lists above the party cap %v, %d within: the fixture does not discriminate", above, capP, within)
			}
		case "capped":
			if err == nil || !strings.Contains(stderr, "party unit") || !strings.Contains(stderr, fmt.Sprintf("%d refused", above)) {
				t.Fatalf("capped: %v %s", err, stderr)
			}
			if len(s.Users) != within {
				t.Fatalf("%d users charged under the party cap, %d lists within it", len(s.Users), within)
			}
			for _, u := range s.Users {
				if *u.PartySpent > capP {
					t.Fatalf("user %+v over the party cap", u)
				}
			}
		}
	}
	for _, bad := range []string{"0", "-1", "nan"} {
		if _, _, err := run(t, "recommend", "--model", mp, "--graph", g, "--protected", marks, "--user", "0", "--store", "sqlite:"+filepath.Join(dir, "x.db"), "--create", "--user-budget-party", bad); err == nil || !strings.Contains(err.Error(), "--user-budget-party") {
			t.Fatalf("--user-budget-party %s: %v", bad, err)
		}
	}
}
