package release

import (
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// heldT is the utility 2s with exact bounds (a transform the exact
// sampler's lazy path serves: it reads the score alone).
type heldT struct{}

func (heldT) Utility(s, _, _ float64) float64                    { return 2 * s }
func (heldT) Delta(ds, _ float64) float64                        { return 2 * ds }
func (heldT) ScoreUtility(s, _ float64) float64                  { return 2 * s }
func (heldT) UtilityBounds(lo, hi, _ float64) (float64, float64) { return 2 * lo, 2 * hi }

// TestCryptoSampleHoldsCandidates: on a graph large enough for the
// scorer's per-query tables, the crypto-seeded release path scores with the
// candidates held in the table (score.Worker.ScoreHeld) and releases valid
// lists from them: K distinct ids, none the user or a neighbour, every pick
// random. With noHeld the same users go through the extracted candidates.
func TestCryptoSampleHoldsCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 300,000-node graph")
	}
	g, err := gen.BarabasiAlbert(300000, 3, randx.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	cfg := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Kind: score.AA, Eps: 0.5, Transform: heldT{}, ExactSampler: true}
	r, err := NewMechanism(cfg, "test:held", g, p, WithoutLedger())
	if err != nil {
		t.Fatal(err)
	}
	const k = 30
	for _, extracted := range []bool{false, true} {
		old := noHeld
		noHeld = extracted
		ws := r.state()
		held := 0
		for u := int32(0); u < int32(g.N()); u += 1499 {
			out, err := r.sample(ws, u, k, 0)
			if err != nil {
				t.Fatalf("user %d: %v", u, err)
			}
			if ws.r.Held > 0 {
				held++
			}
			if len(out.IDs) != k || out.Picks != k || out.Candidates != g.N()-1-len(g.Neighbors(u)) {
				t.Fatalf("user %d: %d ids, %d picks of %d candidates, want %d of %d", u, len(out.IDs), out.Picks, out.Candidates, k, g.N()-1-len(g.Neighbors(u)))
			}
			seen := map[int32]bool{}
			for _, v := range out.IDs {
				if v == u || g.HasEdge(u, v) || seen[v] || v < 0 || int(v) >= g.N() {
					t.Fatalf("user %d: released %d (self, neighbour, repeat or out of range) in %v", u, v, out.IDs)
				}
				seen[v] = true
			}
		}
		noHeld = old
		if extracted && held != 0 {
			t.Fatalf("noHeld: %d users held their candidates", held)
		}
		if !extracted && held == 0 {
			t.Fatal("no user held its candidates on a graph above the table's threshold")
		}
	}
}
