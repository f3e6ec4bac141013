package gen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
	"pgregory.net/rapid"
)

func sameGraph(a, b *graph.Graph) bool {
	return slices.Equal(a.Off, b.Off) && slices.Equal(a.Adj, b.Adj)
}

func TestValidation(t *testing.T) {
	rng := randx.Seeded(1)
	nan := math.NaN()
	cases := []struct {
		name string
		run  func() error
	}{
		{"latent n=1", func() error { _, err := Latent(1, 2, 0.1, rng); return err }},
		{"latent dim=0", func() error { _, err := Latent(10, 0, 0.1, rng); return err }},
		{"latent r=0", func() error { _, err := Latent(10, 2, 0, rng); return err }},
		{"latent r<0", func() error { _, err := Latent(10, 2, -1, rng); return err }},
		{"latent r=NaN", func() error { _, err := Latent(10, 2, nan, rng); return err }},
		{"latent r=Inf", func() error { _, err := Latent(10, 2, math.Inf(1), rng); return err }},
		{"latent nil rng", func() error { _, err := Latent(10, 2, 0.5, nil); return err }},
		{"latent too many edges", func() error { _, err := Latent(1<<20, 2, 10, rng); return err }},
		{"radius meanDeg=0", func() error { _, err := RadiusForMeanDegree(10, 2, 0); return err }},
		{"radius meanDeg>n-1", func() error { _, err := RadiusForMeanDegree(10, 2, 10); return err }},
		{"radius meanDeg NaN", func() error { _, err := RadiusForMeanDegree(10, 2, nan); return err }},
		{"radius dim=0", func() error { _, err := RadiusForMeanDegree(10, 0, 1); return err }},
		{"radius n=1", func() error { _, err := RadiusForMeanDegree(1, 2, 1); return err }},
		{"ba n=1", func() error { _, err := BarabasiAlbert(1, 1, rng); return err }},
		{"ba m=0", func() error { _, err := BarabasiAlbert(10, 0, rng); return err }},
		{"ba m=n", func() error { _, err := BarabasiAlbert(10, 10, rng); return err }},
		{"ba nil rng", func() error { _, err := BarabasiAlbert(10, 2, nil); return err }},
		{"ba too many edges", func() error { _, err := BarabasiAlbert(1<<30, 8, rng); return err }},
		{"er n=0", func() error { _, err := ErdosRenyi(0, 0.5, rng); return err }},
		{"er p=0", func() error { _, err := ErdosRenyi(10, 0, rng); return err }},
		{"er p>1", func() error { _, err := ErdosRenyi(10, 1.5, rng); return err }},
		{"er p=NaN", func() error { _, err := ErdosRenyi(10, nan, rng); return err }},
		{"er nil rng", func() error { _, err := ErdosRenyi(10, 0.5, nil); return err }},
		{"er too many edges", func() error { _, err := ErdosRenyi(1<<20, 0.9, rng); return err }},
		{"erm m=0", func() error { _, err := ErdosRenyiM(10, 0, rng); return err }},
		{"erm m>pairs", func() error { _, err := ErdosRenyiM(10, 46, rng); return err }},
		{"erm nil rng", func() error { _, err := ErdosRenyiM(10, 5, nil); return err }},
		{"write nil", func() error { return WriteEdgeList(&bytes.Buffer{}, nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
}

// Requests within MaxEdges whose memory the machine cannot hold fail fast
// with an error instead of dying out of memory (latent with n = 10^8 and
// mean degree 10 used to: 5e8 edges pass MaxEdges, but the coordinates and
// edge buffers need about 19 GB).
func TestMemoryBound(t *testing.T) {
	rng := randx.Seeded(1)
	r, err := RadiusForMeanDegree(100_000_000, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"latent n=1e8":        func() error { _, err := Latent(100_000_000, 2, r, rng); return err },
		"latent dim=2000":     func() error { _, err := Latent(1<<20, 2000, 1e-9, rng); return err },
		"ba n=1e9 m=1":        func() error { _, err := BarabasiAlbert(1_000_000_000, 1, rng); return err },
		"er n=2e9 tiny p":     func() error { _, err := ErdosRenyi(2_000_000_000, 1e-15, rng); return err },
		"erm n=2e9 m=10":      func() error { _, err := ErdosRenyiM(2_000_000_000, 10, rng); return err },
		"erm n=1e5 m=1e9-ish": func() error { _, err := ErdosRenyiM(100_000, 1_000_000_000, rng); return err },
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "memory") {
			t.Errorf("%s: error %v, want a memory bound error", name, err)
		}
	}
	if err := checkMemory("x", 10, 10, float64(MaxBytes)); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	if err := checkMemory("x", 10, 10, math.NaN()); err == nil {
		t.Error("NaN estimate accepted")
	}
}

func TestNoEdgesError(t *testing.T) {
	_, err := Latent(5, 2, 1e-9, randx.Seeded(1))
	if !errors.Is(err, ErrNoEdges) || !errors.Is(err, graph.ErrEmpty) {
		t.Fatalf("latent with tiny r: err = %v, want ErrNoEdges wrapping graph.ErrEmpty", err)
	}
	_, err = ErdosRenyi(3, 1e-12, randx.Seeded(1))
	if !errors.Is(err, ErrNoEdges) {
		t.Fatalf("G(n,p) with tiny p: err = %v, want ErrNoEdges", err)
	}
}

func TestDeterminism(t *testing.T) {
	gens := map[string]func(rng *rand.Rand) (*graph.Graph, error){
		"latent": func(rng *rand.Rand) (*graph.Graph, error) {
			lg, err := Latent(3000, 2, 0.03, rng)
			if err != nil {
				return nil, err
			}
			return lg.Graph, nil
		},
		"ba":  func(rng *rand.Rand) (*graph.Graph, error) { return BarabasiAlbert(2000, 3, rng) },
		"er":  func(rng *rand.Rand) (*graph.Graph, error) { return ErdosRenyi(2000, 0.003, rng) },
		"erm": func(rng *rand.Rand) (*graph.Graph, error) { return ErdosRenyiM(2000, 5000, rng) },
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			a, err := gen(randx.Seeded(7))
			if err != nil {
				t.Fatal(err)
			}
			b, err := gen(randx.Seeded(7))
			if err != nil {
				t.Fatal(err)
			}
			c, err := gen(randx.Seeded(8))
			if err != nil {
				t.Fatal(err)
			}
			if !sameGraph(a, b) {
				t.Fatal("equal seeds gave different graphs")
			}
			if sameGraph(a, c) {
				t.Fatal("different seeds gave the same graph")
			}
		})
	}
}

func TestLatentCoordsDeterministic(t *testing.T) {
	a, _ := Latent(500, 3, 0.2, randx.Seeded(3))
	b, _ := Latent(500, 3, 0.2, randx.Seeded(3))
	if !slices.Equal(a.Coords, b.Coords) {
		t.Fatal("equal seeds gave different coordinates")
	}
}

// Every pair is an edge iff its latent distance is < r (brute force over all pairs).
func TestLatentMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 300).Draw(t, "n")
		dim := rapid.IntRange(1, 6).Draw(t, "dim")
		deg := rapid.Float64Range(0.5, 20).Draw(t, "meanDeg")
		seed := rapid.Uint64().Draw(t, "seed")
		r, err := RadiusForMeanDegree(max(n, 22), dim, deg)
		if err != nil {
			t.Fatal(err)
		}
		lg, err := Latent(n, dim, r, randx.Seeded(seed))
		if errors.Is(err, ErrNoEdges) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if lg.N() != n || lg.Dim != dim || len(lg.Coords) != n*dim || lg.R != r {
			t.Fatalf("shape: N=%d Dim=%d len=%d R=%g", lg.N(), lg.Dim, len(lg.Coords), lg.R)
		}
		var m int64
		for u := int32(0); u < int32(n); u++ {
			for v := u + 1; v < int32(n); v++ {
				d := lg.Dist(u, v)
				// Independent reference distance.
				var s float64
				for a := 0; a < dim; a++ {
					x := lg.Coords[int(u)*dim+a] - lg.Coords[int(v)*dim+a]
					s += x * x
				}
				if math.Abs(math.Sqrt(s)-d) > 1e-12 {
					t.Fatalf("Dist(%d,%d) = %g, want %g", u, v, d, math.Sqrt(s))
				}
				want := d < r
				if lg.HasEdge(u, v) != want {
					t.Fatalf("pair (%d,%d): dist %g, r %g, edge %v", u, v, d, r, lg.HasEdge(u, v))
				}
				if want {
					m++
				}
			}
		}
		if m != lg.M() {
			t.Fatalf("M = %d, brute force %d", lg.M(), m)
		}
	})
}

// Large r relative to the ball (few cells) and tiny r (many cells, capped).
func TestLatentGridExtremes(t *testing.T) {
	for _, c := range []struct {
		n, dim int
		r      float64
	}{{400, 2, 5}, {400, 1, 1e-4}, {2000, 3, 0.01}, {300, 12, 1.3}, {3000, 5, 0.18}, {4000, 8, 0.3}} {
		if gd, k := gridShape(c.n, c.dim, c.r, BallRadius(c.dim)); k > 1 && 2*BallRadius(c.dim)/float64(k) < c.r {
			t.Fatalf("%+v: cell side below r (gd=%d, k=%d)", c, gd, k)
		} else {
			t.Logf("%+v: gd=%d k=%d", c, gd, k)
		}
		lg, err := Latent(c.n, c.dim, c.r, randx.Seeded(11))
		if err != nil {
			t.Fatal(err)
		}
		var m int64
		for u := int32(0); u < int32(c.n); u++ {
			for v := u + 1; v < int32(c.n); v++ {
				if lg.Dist(u, v) < c.r {
					m++
				}
			}
		}
		if m != lg.M() {
			t.Fatalf("%+v: M = %d, brute force %d", c, lg.M(), m)
		}
	}
}

func TestBallRadius(t *testing.T) {
	// Known: D=1 -> 1/2, D=2 -> 1/sqrt(pi), D=3 -> (3/(4 pi))^(1/3).
	for _, c := range []struct {
		dim  int
		want float64
	}{{1, 0.5}, {2, 1 / math.Sqrt(math.Pi)}, {3, math.Cbrt(3 / (4 * math.Pi))}} {
		if got := BallRadius(c.dim); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("BallRadius(%d) = %g, want %g", c.dim, got, c.want)
		}
	}
	for dim := 1; dim <= 50; dim++ {
		R := BallRadius(dim)
		if v := UnitBallVolume(dim) * math.Pow(R, float64(dim)); math.Abs(v-1) > 1e-9 {
			t.Errorf("dim %d: volume of ball of radius R_D = %g", dim, v)
		}
	}
}

// Points lie in the unit-volume ball and are uniform there: the fraction
// within radius R/2 is 2^-D and each coordinate has mean 0.
func TestLatentPointsUniformInBall(t *testing.T) {
	const n = 20000
	for _, dim := range []int{1, 2, 3, 5} {
		r, _ := RadiusForMeanDegree(n, dim, 5)
		lg, err := Latent(n, dim, r, randx.Seeded(uint64(dim)))
		if err != nil {
			t.Fatal(err)
		}
		R := BallRadius(dim)
		inner := 0
		mean := make([]float64, dim)
		for u := int32(0); u < n; u++ {
			x := lg.Point(u)
			var s float64
			for a, v := range x {
				s += v * v
				mean[a] += v / n
			}
			if math.Sqrt(s) > R*(1+1e-12) {
				t.Fatalf("dim %d: point %d at radius %g > R %g", dim, u, math.Sqrt(s), R)
			}
			if math.Sqrt(s) < R/2 {
				inner++
			}
		}
		p := math.Pow(0.5, float64(dim))
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(inner) / n; math.Abs(got-p) > 5*sd {
			t.Errorf("dim %d: fraction inside R/2 = %g, want %g ± %g", dim, got, p, 5*sd)
		}
		for a, m := range mean {
			// Var of a coordinate is R^2/(D+2).
			if tol := 5 * R / math.Sqrt(float64(dim+2)*n); math.Abs(m) > tol {
				t.Errorf("dim %d coord %d: mean %g, tolerance %g", dim, a, m, tol)
			}
		}
	}
}

// The realised mean degree is close to (slightly below, by boundary effects)
// the target of RadiusForMeanDegree.
func TestLatentMeanDegree(t *testing.T) {
	n := 40000
	if testing.Short() {
		n = 10000
	}
	for _, dim := range []int{1, 2, 3} {
		const target = 10
		r, err := RadiusForMeanDegree(n, dim, target)
		if err != nil {
			t.Fatal(err)
		}
		lg, err := Latent(n, dim, r, randx.Seeded(5))
		if err != nil {
			t.Fatal(err)
		}
		got := 2 * float64(lg.M()) / float64(n)
		if got > target*1.02 || got < target*0.85 {
			t.Errorf("dim %d: mean degree %g, target %d", dim, got, target)
		}
	}
}

func TestBarabasiAlbertStructure(t *testing.T) {
	for _, c := range []struct{ n, m int }{{2, 1}, {3, 2}, {5, 4}, {100, 1}, {1000, 3}, {3000, 7}} {
		g, err := BarabasiAlbert(c.n, c.m, randx.Seeded(uint64(c.n*31+c.m)))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(c.m*(c.n-c.m-1) + c.m*(c.m+1)/2)
		if g.N() != c.n || g.M() != want {
			t.Fatalf("%+v: N=%d M=%d, want N=%d M=%d", c, g.N(), g.M(), c.n, want)
		}
		for u := int32(0); u < int32(c.n); u++ {
			nb := g.Neighbors(u)
			earlier := 0
			for i, v := range nb {
				if v == u || (i > 0 && nb[i-1] == v) {
					t.Fatalf("%+v: node %d has a self-loop or repeat", c, u)
				}
				if v < u {
					earlier++
				}
			}
			wantEarlier := c.m
			if int(u) <= c.m {
				wantEarlier = int(u) // clique
			}
			if earlier != wantEarlier {
				t.Fatalf("%+v: node %d has %d earlier neighbours, want %d", c, u, earlier, wantEarlier)
			}
		}
	}
}

// Attachment is proportional to degree. With m = 1: 0-1, node 2 joins 0 or 1
// (degrees become 2,1,1 up to symmetry), so node 3 picks node 2 w.p. 1/4 and
// each of 0, 1 w.p. 3/8 (uniform attachment would give 1/3 each).
func TestBarabasiAlbertPreferential(t *testing.T) {
	const trials = 20000
	var cnt [3]int
	for s := range uint64(trials) {
		g, err := BarabasiAlbert(4, 1, randx.Seeded(s))
		if err != nil {
			t.Fatal(err)
		}
		cnt[g.Neighbors(3)[0]]++
	}
	want := [3]float64{3.0 / 8, 3.0 / 8, 1.0 / 4}
	for i, c := range cnt {
		p := want[i]
		sd := math.Sqrt(p * (1 - p) / trials)
		if got := float64(c) / trials; math.Abs(got-p) > 5*sd {
			t.Errorf("P(3 -> %d) = %g, want %g ± %g", i, got, p, 5*sd)
		}
	}
}

func TestErdosRenyiMeanDegree(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{2000, 0.01}, {5000, 0.001}, {300, 0.5}, {50, 0.95}} {
		g, err := ErdosRenyi(c.n, c.p, randx.Seeded(uint64(c.n)))
		if err != nil {
			t.Fatal(err)
		}
		N := float64(c.n) * float64(c.n-1) / 2
		mean, sd := c.p*N, math.Sqrt(N*c.p*(1-c.p))
		if math.Abs(float64(g.M())-mean) > 5*sd {
			t.Errorf("%+v: M = %d, want %g ± %g", c, g.M(), mean, 5*sd)
		}
	}
	g, err := ErdosRenyi(30, 1, randx.Seeded(1))
	if err != nil || g.M() != 30*29/2 {
		t.Fatalf("p=1: %v, M=%d", err, g.M())
	}
}

// Every pair has the same marginal probability (catches off-by-one skipping).
func TestErdosRenyiPairUniformity(t *testing.T) {
	const n, trials = 8, 6000
	np := n * (n - 1) / 2
	for _, mode := range []string{"p", "m-small", "m-large"} {
		t.Run(mode, func(t *testing.T) {
			cnt := make(map[[2]int32]int)
			var prob float64
			for s := range uint64(trials) {
				rng := randx.Seeded(s)
				var g *graph.Graph
				var err error
				switch mode {
				case "p":
					prob = 0.3
					g, err = ErdosRenyi(n, prob, rng)
				case "m-small":
					prob = 9.0 / float64(np)
					g, err = ErdosRenyiM(n, 9, rng)
				case "m-large":
					prob = 20.0 / float64(np)
					g, err = ErdosRenyiM(n, 20, rng)
				}
				if errors.Is(err, ErrNoEdges) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if mode != "p" && g.M() != int64(prob*float64(np)+0.5) {
					t.Fatalf("M = %d", g.M())
				}
				g.Edges(func(u, v int32) { cnt[[2]int32{u, v}]++ })
			}
			sd := math.Sqrt(prob * (1 - prob) / trials)
			for u := int32(0); u < n; u++ {
				for v := u + 1; v < n; v++ {
					if got := float64(cnt[[2]int32{u, v}]) / trials; math.Abs(got-prob) > 5*sd {
						t.Errorf("pair (%d,%d): frequency %g, want %g ± %g", u, v, got, prob, 5*sd)
					}
				}
			}
		})
	}
}

func TestPairAt(t *testing.T) {
	i := int64(0)
	for v := int32(1); v < 300; v++ {
		for u := int32(0); u < v; u++ {
			if e := pairAt(i); e.U != u || e.V != v {
				t.Fatalf("pairAt(%d) = %v, want (%d,%d)", i, e, u, v)
			}
			i++
		}
	}
	// Large indices, where float64 sqrt alone is not exact.
	for _, v := range []int64{1 << 20, 94906267, 1<<31 - 1} {
		for _, u := range []int64{0, 1, v / 2, v - 1} {
			if e := pairAt(v*(v-1)/2 + u); int64(e.U) != u || int64(e.V) != v {
				t.Fatalf("pairAt for (%d,%d) = %v", u, v, e)
			}
		}
	}
}

// parseEdgeList is a tiny independent parser for the round-trip test.
func parseEdgeList(t *testing.T, data []byte) [][2]string {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || sc.Text() != f[0]+" "+f[1] {
			t.Fatalf("bad line %q", sc.Text())
		}
		out = append(out, [2]string{f[0], f[1]})
	}
	return out
}

func TestWriteEdgeListRoundTrip(t *testing.T) {
	g, err := BarabasiAlbert(3000, 4, randx.Seeded(9))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteEdgeList(&buf, g); err != nil {
		t.Fatal(err)
	}
	lines := parseEdgeList(t, buf.Bytes())
	if int64(len(lines)) != g.M() {
		t.Fatalf("%d lines for %d edges", len(lines), g.M())
	}
	edges := make([]graph.Edge, len(lines))
	for i, l := range lines {
		u, err1 := strconv.Atoi(l[0])
		v, err2 := strconv.Atoi(l[1])
		if err1 != nil || err2 != nil || u >= v {
			t.Fatalf("line %d: %q", i, l)
		}
		edges[i] = graph.Edge{U: int32(u), V: int32(v)}
	}
	h, st, err := graph.FromEdges(g.N(), edges, nil)
	if err != nil || st.DuplicatesMerged != 0 {
		t.Fatalf("%v %+v", err, st)
	}
	if !sameGraph(g, h) {
		t.Fatal("round trip changed the graph")
	}

	// Labels are written instead of ids.
	labels := []string{"a", "bb", "c", "dd"}
	lg, _, err := graph.FromEdges(4, []graph.Edge{{U: 0, V: 1}, {U: 2, V: 3}, {U: 1, V: 3}}, labels)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := WriteEdgeList(&buf, lg); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "a bb\nbb dd\nc dd\n"; got != want {
		t.Fatalf("labelled output %q, want %q", got, want)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, fmt.Errorf("disk full")
	}
	return len(p), nil
}

func TestWriteEdgeListError(t *testing.T) {
	g, err := BarabasiAlbert(200000, 3, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteEdgeList(&failWriter{n: 1 << 20}, g); err == nil {
		t.Fatal("write error not reported")
	}
}

func memPeak(b *testing.B, f func()) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapSys)/(1<<20), "heapsys-MiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20)/float64(b.N), "alloc-MiB/op")
}

func BenchmarkBarabasiAlbert1e6m10(b *testing.B) {
	memPeak(b, func() {
		for i := 0; i < b.N; i++ {
			if _, err := BarabasiAlbert(1_000_000, 10, randx.Seeded(uint64(i))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLatent1e5deg10(b *testing.B) {
	for _, dim := range []int{2, 3, 8} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			r, _ := RadiusForMeanDegree(100_000, dim, 10)
			memPeak(b, func() {
				for i := 0; i < b.N; i++ {
					if _, err := Latent(100_000, dim, r, randx.Seeded(uint64(i))); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkErdosRenyi1e6deg20(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := ErdosRenyi(1_000_000, 20.0/999_999, randx.Seeded(uint64(i))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteEdgeList1e7(b *testing.B) {
	g, err := BarabasiAlbert(1_000_000, 10, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := WriteEdgeList(discard{}, g); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
