// Command pubplots draws the public-aware comparison of docs/RESULTS.md from
// experiment results: AUC@K and NDCG@K against eps_p and against sigma for
// the non-private score, public-only, DPLP-pub, DPLP and the best of the
// Laplace, exponential and staircase baselines (best by mean over the
// sweep), one figure per dataset and score.
//
// Usage: go run ./scripts/pubplots EPS_RUN_DIR SIGMA_RUN_DIR OUT_DIR
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/research/experiment"
	"github.com/dplp/dplp/research/plot"
)

type key struct {
	ds, score, method string
	x                 float64
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: pubplots EPS_RUN_DIR SIGMA_RUN_DIR OUT_DIR")
		os.Exit(2)
	}
	for i, sweep := range []string{"eps", "sigma"} {
		rows, err := experiment.ReadResults(filepath.Join(os.Args[1+i], "results.json"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "pubplots:", err)
			os.Exit(1)
		}
		if err := draw(rows, sweep, os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "pubplots:", err)
			os.Exit(1)
		}
	}
}

func draw(rows []experiment.Row, sweep, out string) error {
	for _, metric := range []string{"auc", "ndcg"} {
		vals := map[key][]float64{}
		var dss, scores []string
		xset := map[float64]bool{}
		for _, r := range rows {
			x := r.Eps
			if sweep == "sigma" {
				x = r.Sigma
			}
			v := r.AUC
			if metric == "ndcg" {
				v = r.NDCG
			}
			k := key{r.Dataset, r.Score, r.Method, x}
			vals[k] = append(vals[k], v)
			xset[x] = true
			if !slices.Contains(dss, r.Dataset) {
				dss = append(dss, r.Dataset)
			}
			if !slices.Contains(scores, r.Score) {
				scores = append(scores, r.Score)
			}
		}
		var xs []float64
		for x := range xset {
			xs = append(xs, x)
		}
		slices.Sort(xs)
		for _, ds := range dss {
			for _, sc := range scores {
				mean := func(m string) float64 {
					var s float64
					var n int
					for _, x := range xs {
						if v := vals[key{ds, sc, m, x}]; len(v) > 0 {
							mu, _ := ranking.MeanCI(v)
							s += mu
							n++
						}
					}
					return s / math.Max(1, float64(n))
				}
				best := "laplace"
				for _, m := range []string{"exponential", "staircase"} {
					if mean(m) > mean(best) {
						best = m
					}
				}
				label := map[string]string{"auc": "AUC@30", "ndcg": "NDCG@30"}[metric]
				f := &plot.Figure{Title: fmt.Sprintf("%s, %s: %s vs %s", ds, sc, label, sweep), XLabel: sweep, YLabel: label, Width: 13, Height: 8}
				for _, m := range []string{"nonprivate", "public-only", "dplp-pub", "dplp", best} {
					s := plot.Series{Name: m}
					if m == best {
						s.Name = m + " (best noise)"
					}
					for _, x := range xs {
						v := vals[key{ds, sc, m, x}]
						if len(v) == 0 {
							continue
						}
						mu, h := ranking.MeanCI(v)
						s.X, s.Y, s.Err = append(s.X, x), append(s.Y, mu), append(s.Err, h)
					}
					if len(s.X) > 0 {
						f.Series = append(f.Series, s)
					}
				}
				if err := f.Save(filepath.Join(out, fmt.Sprintf("pub_%s_vs_%s_%s_%s", metric, sweep, ds, sc))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
