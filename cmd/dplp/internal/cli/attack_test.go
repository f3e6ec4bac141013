package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// attackGraph writes a small random geometric graph as an edge list.
func attackGraph(t *testing.T) string {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	type pt struct{ x, y float64 }
	pts := make([]pt, 150)
	for i := range pts {
		pts[i] = pt{r.Float64(), r.Float64()}
	}
	var b bytes.Buffer
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			dx, dy := pts[i].x-pts[j].x, pts[i].y-pts[j].y
			if dx*dx+dy*dy < 0.015 {
				fmt.Fprintf(&b, "n%d n%d\n", i, j)
			}
		}
	}
	return writeTemp(t, "g.txt", b.String())
}

func TestAttackJSONAndText(t *testing.T) {
	g := attackGraph(t)
	out, stderr, err := run(t, "attack", "--graph", g, "--sigma", "0.3", "--score", "cn", "--method", "exponential",
		"--calibration", "reference", "--eps", "0.1", "--k", "5", "--attack", "no-noise", "--trials", "200", "--json")
	if err != nil {
		t.Fatal(err, stderr)
	}
	if !strings.Contains(stderr, "WARNING: reference calibration") {
		t.Errorf("no reference warning on stderr: %q", stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"attack", "method", "calibration", "trials", "tpr", "fpr", "accuracy", "eps_claimed", "eps_lower_bound"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, out)
		}
	}
	if m["attack"] != "no-noise" || m["method"] != "exponential" || m["calibration"] != "reference" || m["trials"].(float64) != 200 {
		t.Errorf("values: %s", out)
	}
	if m["accuracy"].(float64) < 0.95 || m["eps_lower_bound"].(float64) <= m["eps_claimed"].(float64) {
		t.Errorf("the no-noise attack should refute the reference claim: %s", out)
	}
	res := writeTemp(t, "res.jsonl", out)
	// Non-private: no claim (null), text output.
	out, _, err = run(t, "attack", "--graph", g, "--sigma", "0.3", "--score", "cn", "--method", "nonprivate",
		"--k", "5", "--attack", "sybil", "--trials", "100", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"eps_claimed":null`) {
		t.Errorf("nonprivate claim should be null: %s", out)
	}
	if err := os.WriteFile(res, append([]byte(nil), []byte(mustRead(t, res)+out)...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "attack", "--graph", g, "--sigma", "0.3", "--score", "cn", "--k", "5", "--trials", "100")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attack triad", "exponential/rigorous", "eps lower bound (95%)", "Clopper-Pearson"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Report: markdown, CSV and plot.
	dir := t.TempDir()
	out, _, err = run(t, "attack", "report", res, "--csv", filepath.Join(dir, "r.csv"), "--plot", filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "| graph | release | eps_p |") || !strings.Contains(out, "**") {
		t.Errorf("markdown table:\n%s", out)
	}
	for _, f := range []string{"r.csv", "p.png", "p.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAttackFlagErrors(t *testing.T) {
	g := attackGraph(t)
	for _, args := range [][]string{
		{"--attack", "bogus"},
		{"--score", "node2vec"},
		{"--method", "dplp"},
		{"--calibration", "loose"},
		{"--eps", "0"},
		{"--k", "0"},
		{"--trials", "1"},
		{"--lists", "0"},
		{"--sybils", "0"},
	} {
		a := append([]string{"attack", "--graph", g, "--sigma", "0.3", "--trials", "20"}, args...)
		if _, _, err := run(t, a...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, _, err := run(t, "attack", "--graph", g); err == nil || !strings.Contains(err.Error(), "protection marks") {
		t.Errorf("missing marks: %v", err)
	}
}

// TestAttackUnit: --unit leaves the per-pick mechanisms' game and
// calibration unchanged (the output differs only by the unit and the claim's
// note; party output carries no unit, as before units existed) and
// recalibrates dplp-list (evidence l1 bound 1 per CN list under the pair
// unit, the party's pairs under the party unit).
func TestAttackUnit(t *testing.T) {
	g := attackGraph(t)
	common := []string{"attack", "--graph", g, "--sigma", "0.3", "--score", "cn", "--k", "5", "--trials", "60", "--hist-lists", "200", "--json"}
	decode := func(out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err, out)
		}
		return m
	}
	// Per-pick: the pair-unit run equals the party run but for unit and
	// claim_note.
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"exponential triad", []string{"--method", "exponential", "--eps", "0.5"}},
		{"laplace-peeling sybil", []string{"--method", "laplace-peeling", "--eps", "0.2", "--attack", "sybil"}},
		{"exponential reference no-noise", []string{"--calibration", "reference", "--attack", "no-noise", "--one-pair"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			party, _, err := run(t, append(append([]string{}, common...), tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			pair, _, err := run(t, append(append(append([]string{}, common...), tc.args...), "--unit", "pair")...)
			if err != nil {
				t.Fatal(err)
			}
			mp, mq := decode(party), decode(pair)
			if _, ok := mp["unit"]; ok || mq["unit"] != "pair" {
				t.Errorf("units: party %v, pair %v", mp["unit"], mq["unit"])
			}
			if !strings.Contains(mq["claim_note"].(string), "implies the pair-unit guarantee") {
				t.Errorf("pair note: %v", mq["claim_note"])
			}
			delete(mq, "unit")
			mq["claim_note"] = mp["claim_note"]
			if !reflect.DeepEqual(mp, mq) {
				t.Errorf("per-pick results differ between units:\n%s\n%s", party, pair)
			}
		})
	}
	l1 := map[string]float64{}
	for _, unit := range []string{"party", "pair"} {
		for _, onePair := range []bool{false, true} {
			args := append(append([]string{}, common...), "--method", "dplp-list", "--eps", "1", "--unit", unit)
			if onePair {
				args = append(args, "--one-pair")
			}
			out, _, err := run(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			m := decode(out)
			ev := m["evidence_l1"].([]any)
			pairs := len(m["target"].(map[string]any)["secret_pairs"].([]any))
			want := 1.0
			if unit == "pair" {
				want = float64(pairs) // group privacy for a secret of several pairs
			}
			if m["unit"] != unit || m["method"] != "dplp-list" || m["eps_p"].(float64) != 0 || m["eps_list"].(float64) != 1 || len(ev) != 1 ||
				m["eps_claimed"].(float64) != want || m["claim_proven"] != true {
				t.Errorf("%s one-pair %v: %s", unit, onePair, out)
			}
			l1[unit] = max(l1[unit], ev[0].(float64))
		}
	}
	if l1["pair"] != 1 || !(l1["party"] > 1) {
		t.Errorf("largest CN evidence L1 party %v, pair %v: want > 1 and 1", l1["party"], l1["pair"])
	}
	text, _, err := run(t, "attack", "--graph", g, "--sigma", "0.3", "--score", "cn", "--k", "5", "--trials", "60", "--hist-lists", "200", "--method", "dplp-list", "--eps", "1", "--unit", "pair", "--one-pair")
	if err != nil || !strings.Contains(text, "dplp-list, CN, eps 1 per list (whatever K), K 5, 1 list(s) per observer, pair unit;") ||
		!strings.Contains(text, "evidence l1 bound L1(u) under the pair unit: 1") {
		t.Errorf("text (%v):\n%s", err, text)
	}
	for _, args := range [][]string{
		{"--unit", "edge"},
		{"--method", "dplp-list", "--calibration", "reference"},
		{"--method", "dplp-list", "--eps", "0"},
	} {
		a := append([]string{"attack", "--graph", g, "--sigma", "0.3", "--trials", "20"}, args...)
		if _, _, err := run(t, a...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
