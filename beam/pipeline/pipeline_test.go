package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// writeModel saves a hand-made DPLP table for score.
func writeModel(t *testing.T, dir, score string, eps float64) string {
	return writeModelVariant(t, dir, score, "dplp", eps)
}

// writeModelVariant is writeModel for a given variant (dplp-pub: the
// lexicographic mechanism).
func writeModelVariant(t *testing.T, dir, score, variant string, eps float64) string {
	t.Helper()
	path := filepath.Join(dir, "model-"+score+"-"+variant+".json")
	m := &model.Model{Score: score, Variant: model.Variant(variant), EpsP: eps, Grid: 6, F: []float64{0, 0.35, 0.55, 0.7, 0.85, 1}}
	if err := model.Save(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// mixedGraph: string and decimal labels, comments, commas, CRLF and CR line
// ends, extra columns, repeated and reciprocal lines, self-loops (one node
// appears only in a self-loop), a byte-order mark.
func mixedGraph(rng *rand.Rand, n, m int) (edges, marks string) {
	label := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprint(i * 7)
		case 1:
			return fmt.Sprintf("user-%d", i)
		case 2:
			return fmt.Sprintf("0%d", i) // not canonical decimal: a string label
		}
		return fmt.Sprintf("ü%d", i)
	}
	var b strings.Builder
	b.WriteString("\xEF\xBB\xBF# a comment\n% another\n\n")
	fmt.Fprintf(&b, "%s %s\n", label(n), label(n)) // self-loop only node
	var es [][2]int
	for range m {
		u, v := rng.IntN(n), rng.IntN(n)
		es = append(es, [2]int{u, v})
		switch rng.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "%s,%s,0.5\r\n", label(u), label(v))
		case 1:
			fmt.Fprintf(&b, "  %s\t%s extra more\r", label(u), label(v))
		case 2:
			fmt.Fprintf(&b, "%s %s\n%s %s\n", label(v), label(u), label(u), label(v))
		default:
			fmt.Fprintf(&b, "%s %s\n", label(u), label(v))
		}
	}
	var p strings.Builder
	p.WriteString("# marks\n")
	for _, e := range es {
		if e[0] != e[1] && rng.IntN(10) < 3 {
			fmt.Fprintf(&p, "%s %s\n", label(e[0]), label(e[1]))
		}
	}
	for range m / 20 { // marked non-edges
		u, v := rng.IntN(n), rng.IntN(n)
		if u != v {
			fmt.Fprintf(&p, "%s,%s\n", label(u), label(v))
		}
	}
	return b.String(), p.String()
}

// hubGraph: a sparse random graph plus hubs adjacent to most nodes.
func hubGraph(rng *rand.Rand, n, m, hubs int) (edges, marks string) {
	var b, p strings.Builder
	for i := range m {
		u, v := rng.IntN(n), rng.IntN(n)
		fmt.Fprintf(&b, "n%d n%d\n", u, v)
		if i%4 == 0 && u != v {
			fmt.Fprintf(&p, "n%d n%d\n", u, v)
		}
	}
	for h := range hubs {
		for v := range n {
			if v != h && rng.IntN(10) < 8 {
				fmt.Fprintf(&b, "n%d n%d\n", h, v)
				if rng.IntN(5) == 0 {
					fmt.Fprintf(&p, "n%d n%d\n", v, h)
				}
			}
		}
	}
	return b.String(), p.String()
}

// seedp returns a pointer to seed (Config.Seed).
func seedp(seed uint64) *uint64 { return &seed }

// loadRef is the single-machine reading of the inputs: graph.ReadFile, the
// node universe added with graph.WithNodes (the labels of the marks file
// and of the node list), then protect.ReadFile. marksPath and nodesPath
// may be "".
func loadRef(t *testing.T, graphPath, marksPath, nodesPath string) (*graph.Graph, *protect.Set) {
	t.Helper()
	g, _, err := graph.ReadFile(graphPath)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	if marksPath != "" {
		f, err := os.Open(marksPath)
		if err != nil {
			t.Fatal(err)
		}
		_, err = graph.ScanPairs(f, marksPath, func(_ int64, a, b []byte, _ bool) error {
			extra = append(extra, string(a), string(b))
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if nodesPath != "" {
		f, err := os.Open(nodesPath)
		if err != nil {
			t.Fatal(err)
		}
		_, err = graph.ScanLabels(f, nodesPath, func(_ int64, a []byte) error {
			extra = append(extra, string(a))
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if g, _, err = graph.WithNodes(g, extra); err != nil {
		t.Fatal(err)
	}
	if marksPath == "" {
		p, err := protect.New(g.N(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return g, p
	}
	p, err := protect.ReadFile(marksPath, g)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

// single is the single-machine release: release.New(...).Stream with
// release.WithSeed on the inputs as loadRef reads them.
func single(t *testing.T, graphPath, marksPath, modelPath string, k int, seed uint64) []string {
	return singleNodes(t, graphPath, marksPath, "", modelPath, k, seed)
}

// singleNodes is single with a node list. Users are released in label
// order, bytewise (graph.Graph.ByLabel), as `dplp recommend --all`.
func singleNodes(t *testing.T, graphPath, marksPath, nodesPath, modelPath string, k int, seed uint64) []string {
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
	users := g.ByLabel() // recommend --all's order
	var out []string
	err = rec.Stream(context.Background(), users, k, func(_ int, r release.Result) error {
		line, err := RenderLine(r.User, r.List, r.K, m.EpsP, r.Cost, true)
		out = append(out, line)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runBeam(t *testing.T, c Config) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	if _, err := Build(s, c); err != nil {
		t.Fatal(err)
	}
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestBeamEqualsSingleMachine(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	type graphCase struct {
		name         string
		edges, marks string
		shardBytes   int64
		hubChunk     int
	}
	me, mm := mixedGraph(rng, 150, 500)
	he, hm := hubGraph(rng, 300, 400, 3)
	graphs := []graphCase{
		{"mixed", me, mm, 700, 0},
		{"hubs", he, hm, 1 << 20, 16},
	}
	cases := []struct {
		graph   int
		score   string
		eps     float64
		k       int
		seed    uint64
		shards  int
		variant string
	}{
		{0, "cn", 0.5, 5, 1, 1, ""},
		{0, "aa", 1, 7, 2, 1, ""},
		{0, "ra", 0.3, 3, 3, 1, ""},
		{0, "jc", 2, 4, 4, 1, ""},
		{1, "aa", 0.5, 10, 5, 1, ""},
		{1, "cn", 4, 6, 6, 4, ""},
		{0, "aa", 1, 5, 7, 1, "dplp-pub"},
		{1, "ra", 2, 5, 8, 1, "dplp-pub"},
	}
	for _, gc := range graphs {
		if err := os.WriteFile(filepath.Join(dir, gc.name+".txt"), []byte(gc.edges), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, gc.name+".marks"), []byte(gc.marks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		gc := graphs[c.graph]
		variant := c.variant
		if variant == "" {
			variant = "dplp"
		}
		t.Run(fmt.Sprintf("%s-%s-%s", gc.name, c.score, variant), func(t *testing.T) {
			gp, mp := filepath.Join(dir, gc.name+".txt"), filepath.Join(dir, gc.name+".marks")
			modelPath := writeModelVariant(t, dir, c.score, variant, c.eps)
			want := single(t, gp, mp, modelPath, c.k, c.seed)
			mb, err := os.ReadFile(modelPath)
			if err != nil {
				t.Fatal(err)
			}
			old := ShardBytes
			ShardBytes = gc.shardBytes
			defer func() { ShardBytes = old }()
			out := filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", i))
			runBeam(t, Config{Graph: gp, Protected: mp, Model: mb, K: c.k, Seed: seedp(c.seed), Out: out,
				Charges: out + ".charges", RunID: "test", HubChunk: gc.hubChunk, OutShards: c.shards})
			var got []string
			for i := range max(c.shards, 1) {
				got = append(got, readLines(t, ShardName(out, i, c.shards))...)
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
			picks := 0
			for _, l := range want {
				if !strings.Contains(l, `"cost":0,`) {
					picks++
				}
			}
			t.Logf("%d users, %d with random picks", len(want), picks)
		})
	}
}

// Each user's assembled release.UserInput (candidates, s, s_pub, zero
// block, Delta_s, S_max, N) equals score.Worker's, for every score, with
// tiny shards and salting blocks.
func TestInputsEqualScoreWorker(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 10))
	me, mm := mixedGraph(rng, 80, 300)
	gp, mp := filepath.Join(dir, "g"), filepath.Join(dir, "m")
	if err := os.WriteFile(gp, []byte(me), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, []byte(mm), 0o644); err != nil {
		t.Fatal(err)
	}
	old := ShardBytes
	ShardBytes = 300
	defer func() { ShardBytes = old }()
	for _, k := range []score.Kind{score.CN, score.AA, score.RA, score.JC} {
		t.Run(k.String(), func(t *testing.T) { compareInputs(t, gp, mp, k, 3) })
	}
	// Compressed inputs are read as one shard.
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(me))
	zw.Close()
	if err := os.WriteFile(gp+".gz", zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("AA-gz", func(t *testing.T) { compareInputs(t, gp+".gz", mp, score.AA, 5) })
}
