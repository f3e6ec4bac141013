package lptest

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dplp/dplp/randx"
)

// bruteAUC counts pairs directly.
func bruteAUC(pos, neg []float64) float64 {
	var s float64
	for _, p := range pos {
		for _, n := range neg {
			switch {
			case p > n:
				s++
			case p == n:
				s += 0.5
			}
		}
	}
	return s / float64(len(pos)*len(neg))
}

func TestAUCMatchesBruteForce(t *testing.T) {
	r := randx.Seeded(1)
	for trial := 0; trial < 200; trial++ {
		pos := make([]float64, 1+r.IntN(20))
		neg := make([]float64, 1+r.IntN(20))
		for i := range pos {
			pos[i] = float64(r.IntN(6)) // many ties
		}
		for i := range neg {
			neg[i] = float64(r.IntN(6))
		}
		if got, want := AUC(pos, neg), bruteAUC(pos, neg); math.Abs(got-want) > 1e-12 {
			t.Fatalf("AUC(%v, %v) = %v, want %v", pos, neg, got, want)
		}
	}
}

func TestHoldOut(t *testing.T) {
	g, _, err := PlantedPartition(100, 4, 0.3, 0.02, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := HoldOut(g, 0.1, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	k := int(0.1 * float64(g.M()))
	if len(sp.TestPos) != k || len(sp.TestNeg) != k {
		t.Fatalf("%d positives, %d negatives, want %d each", len(sp.TestPos), len(sp.TestNeg), k)
	}
	if sp.Train.M() != g.M()-int64(k) || sp.Train.N() != g.N() {
		t.Fatalf("training graph has %d nodes, %d edges", sp.Train.N(), sp.Train.M())
	}
	seen := map[[2]int32]bool{}
	for _, e := range sp.TestPos {
		if !g.HasEdge(e.U, e.V) || sp.Train.HasEdge(e.U, e.V) || seen[[2]int32{e.U, e.V}] {
			t.Fatalf("bad held-out edge %v", e)
		}
		seen[[2]int32{e.U, e.V}] = true
	}
	for _, e := range sp.TestNeg {
		if e.U >= e.V || g.HasEdge(e.U, e.V) || seen[[2]int32{e.U, e.V}] {
			t.Fatalf("bad negative %v", e)
		}
		seen[[2]int32{e.U, e.V}] = true
	}
}

func TestReadEdgeList(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte("# comment\n10 20\n20 30\n\n30 10\n20 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := ReadEdgeList(p)
	if err != nil {
		t.Fatal(err)
	}
	if g.N() != 3 || g.M() != 3 || g.Label(0) != "10" || g.Label(2) != "30" {
		t.Fatalf("got N=%d M=%d labels %q %q", g.N(), g.M(), g.Label(0), g.Label(2))
	}
	if err := os.WriteFile(p, []byte("1 2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEdgeList(p); err == nil {
		t.Error("short line: want an error")
	}
}
