package predict

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

func TestParse(t *testing.T) {
	for _, n := range []string{"cn", "AA", "node2vec", "deepwalk", "line", "gcn", "prune", "struc2vec", "file:x.csv"} {
		if _, err := Parse(n); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"", "word2vec", "file:"} {
		if _, err := Parse(n); err == nil {
			t.Fatalf("%q accepted", n)
		}
	}
}

func TestReadScores(t *testing.T) {
	g, _, err := graph.Parse(strings.NewReader("a b\nb c\nc d\n"), "g")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := []struct{ in, err string }{
		{"a,c,0.5\n# c\nb d 0.25\n", ""},
		{"a,c,0.5\nc,a,0.5\nd b 0.25\n", ""}, // a reciprocal line with the same score is merged
		{"a,c,1.5\n", "f:1: score 1.5 outside the declared range [0, 1]"},
		{"a,c,x\n", "f:1: score \"x\" is not a finite number"},
		{"a,z,0.1\n", "f:1: unknown node label \"z\""},
		{"a,c\n", "f:1: missing score column"},
		{"a,c,0.1\nc,a,0.2\na,c,0.3\n", "f:2: pair \"c\",\"a\" scored 0.2, but \"a\",\"c\" was scored 0.1 (scores are undirected)"},
		{"a,c,0.1\nc,a,0.1\na,c,0.1\n", "f:3: pair \"a\",\"c\" listed twice"},
		{"", "f: no score lines"},
		{"# comments only\n", "f: no score lines"},
		{"a,a,0.1\n", "f:1: self-pair"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, "f")
		os.WriteFile(p, []byte(c.in), 0o644)
		fn, err := ReadScores(p, g, 0, 1)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), strings.Replace(c.err, "f:", p+":", 1)) {
				t.Fatalf("%q: err %v want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		id := func(l string) int32 { x, _ := g.ID(l); return x }
		if fn(id("a"), id("c")) != 0.5 || fn(id("c"), id("a")) != 0.5 || fn(id("d"), id("b")) != 0.25 || fn(id("a"), id("d")) != 0 {
			t.Fatal("lookup wrong")
		}
		s, _ := Parse("file:" + p)
		sc, err := s.Fit(context.Background(), g, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		var r = new(scoreResult)
		w.Score(id("a"), &r.res)
		if x, _ := w.At(id("c")); x != 0.5 || r.res.DeltaS != 1 || r.res.SMax != 1 {
			t.Fatalf("file scorer: %v %+v", x, r.res)
		}
	}
}

func TestEvalLPTriadsAndEmbeddings(t *testing.T) {
	lg, err := gen.Latent(400, 2, 0.09, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"cn", "aa", "jc", "gcn", "deepwalk", "line"}
	if testing.Short() {
		names = names[:3]
	} else if embed.RaceEnabled {
		names = names[:5] // walk-based training is slow under the race detector
	}
	for _, n := range names {
		s, _ := Parse(n)
		res, err := EvalLP(context.Background(), lg.Graph, s, 0.1, 2, Options{Seed: 1, Epochs: 30})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: ROC-AUC %.3f ± %.3f (%.1f s)", n, res.ROCAUCMean, res.ROCAUCCI95, res.Seconds)
		// A geometric graph is easy: every predictor must beat chance clearly.
		if !(res.ROCAUCMean > 0.7) || len(res.PerSeed) != 2 {
			t.Fatalf("%s: %+v", n, res)
		}
	}
	if _, err := EvalLP(context.Background(), lg.Graph, Spec{Name: "cn", Triad: true}, 1.5, 1, Options{}); err == nil {
		t.Fatal("holdout 1.5 accepted")
	}
}

// TestFitStopsWhenCancelled cancels every embedding predictor from its
// first progress report: Fit and EvalLP return context.Canceled. (Walks run
// on all cores, so chunks in flight may still report; package embed checks
// with one worker that nothing starts after the cancel.)
func TestFitStopsWhenCancelled(t *testing.T) {
	lg, err := gen.Latent(100, 2, 0.15, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Embedding {
		s, _ := Parse(name)
		ctx, cancel := context.WithCancel(context.Background())
		reports := 0
		opt := Options{Seed: 1, Progress: func(int, int) { reports++; cancel() }}
		if sc, err := s.Fit(ctx, lg.Graph, nil, opt); !errors.Is(err, context.Canceled) || sc != nil || reports == 0 {
			t.Errorf("%s: Fit gave scorer %v, err %v after %d reports; want context.Canceled", name, sc != nil, err, reports)
		}
		if _, err := EvalLP(ctx, lg.Graph, s, 0.1, 2, opt); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: EvalLP err %v; want context.Canceled", name, err)
		}
	}
}

func FuzzReadScores(f *testing.F) {
	g, _, err := graph.Parse(strings.NewReader("a b\nb c\nc d\n"), "g")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"a,c,0.5\n", "a c 1\n", "a,c,nan\n", "a,c\n", "a,c,2\n", "# x\n", "a,a,0\n"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		p := filepath.Join(dir, "s.csv")
		if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		fn, err := ReadScores(p, g, 0, 1)
		if err != nil {
			if !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		for u := int32(0); u < 4; u++ {
			for v := int32(0); v < 4; v++ {
				if x := fn(u, v); !(x >= 0 && x <= 1) {
					t.Fatalf("score %v outside [0, 1]", x)
				}
			}
		}
	})
}
