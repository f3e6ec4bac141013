package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The metamorphic suite of issue 23 (docs/privacy-model.md §15): the same
// graph and marks written differently (lines shuffled, endpoints swapped)
// train bit-identical models and release identical seeded lists; and a
// neighbouring graph whose removed protected edge was the first appearance
// of a node (or its only edge) trains a bit-identical model and reads
// without error.

// repFixture is a small graph with string labels, its marks, and the
// representations compared.
type repFixture struct {
	dir               string
	graph, shuffled   string // G, and G written differently
	neighbour, marks  string // G' (one protected edge removed), marks (shared)
	users             []string
	firstLabel, loner string
}

func newRepFixture(t *testing.T) *repFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 90
	label := func(i int) string { return fmt.Sprintf("user-%c%d", 'a'+rune((i*7)%26), i) }
	seen := map[[2]int]bool{}
	var edges [][2]int
	for len(edges) < 4*n {
		a, b := rng.IntN(n), rng.IntN(n)
		if a == b || seen[[2]int{min(a, b), max(a, b)}] || a == n-1 || b == n-1 {
			continue
		}
		seen[[2]int{min(a, b), max(a, b)}] = true
		edges = append(edges, [2]int{a, b})
	}
	// The loner's only edge is protected, and it is the file's first line, so
	// the loner is the first label to appear in G.
	edges = append([][2]int{{n - 1, 3}}, edges...)
	var marks [][2]int
	marks = append(marks, edges[0])
	for i, e := range edges[1:] {
		if i%6 == 0 {
			marks = append(marks, e)
		}
	}
	marks = append(marks, [2]int{5, 77}, [2]int{8, 40}) // non-edges (or edges) marked too
	lines := func(es [][2]int, swap bool) string {
		var sb strings.Builder
		for i, e := range es {
			a, b := label(e[0]), label(e[1])
			if swap && i%2 == 1 {
				a, b = b, a
			}
			sb.WriteString(a + " " + b + "\n")
		}
		return sb.String()
	}
	f := &repFixture{dir: t.TempDir(), firstLabel: label(n - 1), loner: label(n - 1)}
	write := func(name, content string) string {
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.graph = write("g.txt", lines(edges, false))
	sh := slices.Clone(edges)
	rng.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
	f.shuffled = write("g-shuffled.txt", lines(sh, true))
	f.neighbour = write("g-neighbour.txt", lines(edges[1:], false))
	f.marks = write("marks.txt", lines(marks, true))
	f.users = []string{label(3), label(10), label(42), label(n - 1)}
	return f
}

// modelCore is a model file without what may differ between runs that read
// the same data (creation time, input file names).
func modelCore(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Model map[string]any `json:"model"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if meta, ok := file.Model["meta"].(map[string]any); ok {
		delete(meta, "created")
		delete(meta, "dataset")
	}
	return file.Model
}

func TestRepresentationInvariance(t *testing.T) {
	f := newRepFixture(t)
	type cell struct{ score, variant, unit string }
	var cells []cell
	for _, s := range []string{"cn", "aa", "ra", "jc", "pa"} {
		for _, v := range []string{"dplp", "lin", "umnn", "dplp-pub"} {
			cells = append(cells, cell{s, v, ""})
		}
	}
	cells = append(cells, cell{"deepwalk", "dplp", ""}, cell{"line", "dplp-pub", ""})
	// dplp-list: its fit (pseudo-protected training graph, labelled pairs,
	// rescaling, noise draws) must not depend on the file either, under
	// both units.
	for _, s := range []string{"cn", "aa", "jc"} {
		for _, u := range []string{"pair", "party"} {
			cells = append(cells, cell{s, "dplp-list", u})
		}
	}
	if testing.Short() {
		cells = cells[:2]
	}
	for _, c := range cells {
		t.Run(c.score+"/"+c.variant+c.unit, func(t *testing.T) {
			models := map[string]string{}
			for _, rep := range []struct{ name, graph string }{{"G", f.graph}, {"shuffled", f.shuffled}, {"neighbour", f.neighbour}} {
				mp := filepath.Join(f.dir, fmt.Sprintf("%s-%s-%s.json", c.score, c.variant, rep.name))
				args := []string{"train", "--graph", rep.graph, "--protected", f.marks, "--score", c.score, "--variant", c.variant,
					"--eps", "0.5", "--epochs", "2", "--neg-per-query", "20", "--out", mp}
				if c.score == "deepwalk" || c.score == "line" {
					args = append(args, "--dim", "8", "--emb-epochs", "1")
				}
				if c.unit != "" {
					args = append(args, "--unit", c.unit)
				}
				if _, stderr, err := run(t, args...); err != nil {
					t.Fatalf("%s: train: %v\n%s", rep.name, err, stderr)
				}
				models[rep.name] = mp
			}
			base := modelCore(t, models["G"])
			for _, other := range []string{"shuffled", "neighbour"} {
				if got := modelCore(t, models[other]); !reflect.DeepEqual(base, got) {
					t.Fatalf("the model trained on %s differs from the one trained on G", other)
				}
			}
			// Seeded lists: identical for the same graph written differently.
			var outs []string
			for _, g := range []string{f.graph, f.shuffled} {
				out, stderr, err := run(t, "recommend", "--model", models["G"], "--graph", g, "--protected", f.marks,
					"--user", strings.Join(f.users, ","), "--k", "3", "--seed", "7", "--fresh", "--format", "jsonl",
					"--store", "sqlite:"+filepath.Join(t.TempDir(), "l.db"), "--create")
				if err != nil {
					t.Fatalf("recommend: %v\n%s", err, stderr)
				}
				outs = append(outs, out)
			}
			if outs[0] != outs[1] || !strings.Contains(outs[0], f.loner) {
				t.Fatalf("seeded lists differ between representations:\n%s\n%s", outs[0], outs[1])
			}
		})
	}
}

// TestNeighbourReadsIdentically: a node whose only edge is protected is a
// node of G' too; every command reads G and G' with the same outcome.
func TestNeighbourReadsIdentically(t *testing.T) {
	f := newRepFixture(t)
	for _, g := range []string{f.graph, f.neighbour} {
		out, stderr, err := run(t, "score", "--graph", g, "--protected", f.marks, "--score", "cn", "--query", f.loner, "--top", "3")
		if err != nil {
			t.Fatalf("%s: %v\n%s", g, err, stderr)
		}
		if !strings.Contains(out, f.loner) && out == "" {
			t.Fatalf("%s: no output", g)
		}
	}
	// A node list declares users without edges.
	nodes := filepath.Join(f.dir, "nodes.txt")
	os.WriteFile(nodes, []byte("# users\nnewcomer\n"), 0o644)
	if _, stderr, err := run(t, "score", "--graph", f.graph, "--protected", f.marks, "--nodes", nodes, "--score", "cn", "--query", "newcomer"); err != nil {
		t.Fatalf("declared node: %v\n%s", err, stderr)
	}
}

// TestSyntheticSnapshotRefused: convert --sigma records synthetic marks, and
// recommend refuses them as it refuses --sigma; a marks file is accepted.
func TestSyntheticSnapshotRefused(t *testing.T) {
	f := newRepFixture(t)
	snap := filepath.Join(f.dir, "g.dplpg")
	if _, stderr, err := run(t, "convert", "--graph", f.graph, "--sigma", "0.3", "--out", snap); err != nil || !strings.Contains(stderr, "synthetic") {
		t.Fatalf("convert --sigma: %v\n%s", err, stderr)
	}
	mp := filepath.Join(f.dir, "m.json")
	if _, stderr, err := run(t, "train", "--graph", snap, "--score", "cn", "--eps", "0.5", "--epochs", "1", "--out", mp); err != nil {
		t.Fatalf("train on a synthetic snapshot (research use): %v\n%s", err, stderr)
	}
	store := "sqlite:" + filepath.Join(f.dir, "l.db")
	_, _, err := run(t, "recommend", "--model", mp, "--graph", snap, "--user", f.users[0], "--store", store)
	if err == nil || !strings.Contains(err.Error(), "synthetic") {
		t.Fatalf("recommend accepted synthetic snapshot marks: %v", err)
	}
	if _, stderr, err := run(t, "recommend", "--model", mp, "--graph", snap, "--protected", f.marks, "--user", f.users[0], "--store", store, "--create"); err != nil {
		t.Fatalf("recommend with a marks file over the snapshot: %v\n%s", err, stderr)
	}
}

// TestModelOnOtherDataNoted: recommend notes a model trained on other data
// (its fingerprint), and says nothing on the data it was trained on or on a
// neighbouring graph (same labels, public graph and marks).
func TestModelOnOtherDataNoted(t *testing.T) {
	f := newRepFixture(t)
	mp := filepath.Join(f.dir, "m.json")
	if _, stderr, err := run(t, "train", "--graph", f.graph, "--protected", f.marks, "--score", "cn", "--eps", "0.5", "--epochs", "1", "--out", mp); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	other := filepath.Join(f.dir, "other-marks.txt")
	os.WriteFile(other, []byte(f.users[0]+" "+f.users[1]+"\n"), 0o644)
	for _, c := range []struct {
		graph, marks string
		noted        bool
	}{{f.graph, f.marks, false}, {f.neighbour, f.marks, false}, {f.shuffled, f.marks, false}, {f.graph, other, true}} {
		_, stderr, err := run(t, "recommend", "--model", mp, "--graph", c.graph, "--protected", c.marks, "--user", f.users[0], "--seed", "1",
			"--create", "--store", "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
		if err != nil {
			t.Fatalf("recommend: %v\n%s", err, stderr)
		}
		if got := strings.Contains(stderr, "trained on other data"); got != c.noted {
			t.Errorf("%s with %s: noted %v, want %v\n%s", filepath.Base(c.graph), filepath.Base(c.marks), got, c.noted, stderr)
		}
	}
}
