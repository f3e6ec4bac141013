package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
