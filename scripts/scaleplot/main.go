// Command scaleplot draws docs/img/scale.{png,svg}: wall time of each step
// against graph size (Barabasi-Albert, m = 10), both on log scales, from
// the measurements in docs/SCALE.md (copied here as data).
package main

import (
	"fmt"
	"math"
	"os"

	"github.com/dplp/dplp/research/plot"
)

// seconds per step at 1e5, 1e6 and 1e7 nodes (NaN: not measured).
var steps = []struct {
	name string
	secs [3]float64
}{
	{"gen", [3]float64{0.07, 1.2, 66.6}},
	{"convert", [3]float64{0.10, 1.45, 19.2}},
	{"stats", [3]float64{0.10, 2.5, 200}},
	{"train", [3]float64{2.61, 45, 97}},
	{"recommend --all (durable)", [3]float64{3.7, 45, 592}},
}

func main() {
	nodes := []float64{1e5, 1e6, 1e7}
	fig := &plot.Figure{Title: "dplp on Barabasi-Albert graphs (m = 10), 2 shared cores", XLabel: "nodes", YLabel: "log10 wall seconds", LogX: true, XTicks: nodes}
	for _, s := range steps {
		var xs, ys []float64
		for i, v := range s.secs {
			if !math.IsNaN(v) {
				xs = append(xs, nodes[i])
				ys = append(ys, math.Log10(v))
			}
		}
		fig.Series = append(fig.Series, plot.Series{Name: s.name, X: xs, Y: ys})
	}
	if err := fig.Save("docs/img/scale"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
