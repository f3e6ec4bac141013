package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/spf13/cobra"
)

// loadGraph reads --graph and prints the reader's notes to stderr.
func loadGraph(cmd *cobra.Command, path string) (*graph.Graph, *graph.ReadReport, error) {
	if path == "" {
		return nil, nil, fmt.Errorf("--graph FILE is required")
	}
	var bar *progress.Bar
	if st, err := os.Stat(path); err == nil && st.Size() > 32<<20 {
		bar = progress.New(st.Size(), "reading "+filepath.Base(path))
	}
	r, c, err := graph.OpenProgress(path, func(n int) { bar.Add(n) })
	if err != nil {
		return nil, nil, err
	}
	g, rep, err := graph.Parse(r, path)
	c.Close()
	bar.Finish()
	if err != nil {
		return nil, nil, err
	}
	for _, n := range rep.Notes() {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	return g, rep, nil
}

// protFlags are the shared flags selecting protection marks.
type protFlags struct {
	file     string
	sigma    float64
	nonEdges float64
	seed     uint64
}

// register adds the flags; seedName names the seed flag of the marks.
func (p *protFlags) register(cmd *cobra.Command, seedName string) {
	f := cmd.Flags()
	f.StringVar(&p.file, "protected", "", "file of protected pairs `a b` (a marks b; may name non-edges)")
	f.Float64Var(&p.sigma, "sigma", math.NaN(), "instead of --protected: mark this fraction of edges protected, in [0,1]")
	f.Float64Var(&p.nonEdges, "protect-nonedges", 0, "with --sigma: also mark this fraction of each node's non-edges, in [0,1]")
	f.Uint64Var(&p.seed, seedName, 1, "with --sigma: seed of the synthetic protection marks")
}

// load returns the protection set: from the file, synthetic, or empty when
// neither is given and allowEmpty.
func (p *protFlags) load(g *graph.Graph, allowEmpty bool) (*protect.Set, error) {
	hasSigma := !math.IsNaN(p.sigma)
	switch {
	case p.file != "" && hasSigma:
		return nil, fmt.Errorf("give either --protected or --sigma, not both")
	case p.file != "":
		return protect.ReadFile(p.file, g)
	case hasSigma:
		if err := checkFrac("sigma", p.sigma); err != nil {
			return nil, err
		}
		if err := checkFrac("protect-nonedges", p.nonEdges); err != nil {
			return nil, err
		}
		return protect.Synthetic(g, p.sigma, p.nonEdges, randx.Derive(p.seed, 0x70726f74))
	case allowEmpty:
		return protect.Empty(g.N()), nil
	}
	return nil, fmt.Errorf("protection marks are required: --protected FILE or --sigma X")
}
