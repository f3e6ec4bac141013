package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"weak"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/snapshot"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// loadGraph reads --graph and prints the reader's notes to stderr. The file
// is an edge list (see graph.Parse) or a binary snapshot (snapshot package;
// recognised by its magic bytes, whatever its name). Protection marks stored
// in a snapshot are remembered for protFlags.load.
func loadGraph(cmd *cobra.Command, path string) (*graph.Graph, *graph.ReadReport, error) {
	if path == "" {
		return nil, nil, fmt.Errorf("--graph FILE is required")
	}
	if isSnap, err := snapshot.IsSnapshot(path); err != nil {
		return nil, nil, err
	} else if isSnap {
		s, err := snapshot.Load(path)
		if err != nil {
			return nil, nil, err
		}
		if s.Marks != nil {
			rememberMarks(s.Graph, s.Marks)
		}
		return s.Graph, &graph.ReadReport{Name: path, BuildStats: s.Build}, nil
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

// snapshotMarks maps a graph loaded from a snapshot to the protection marks
// stored with it. Keys are weak, and an entry is deleted when its graph is
// collected.
var snapshotMarks sync.Map // weak.Pointer[graph.Graph] -> *protect.Set

func rememberMarks(g *graph.Graph, m *protect.Set) {
	k := weak.Make(g)
	snapshotMarks.Store(k, m)
	runtime.AddCleanup(g, func(k weak.Pointer[graph.Graph]) { snapshotMarks.Delete(k) }, k)
}

// storedMarks returns the marks of the snapshot g was loaded from, or nil.
func storedMarks(g *graph.Graph) *protect.Set {
	if m, ok := snapshotMarks.Load(weak.Make(g)); ok {
		return m.(*protect.Set)
	}
	return nil
}

// protFlags are the shared flags selecting protection marks.
type protFlags struct {
	file     string
	sigma    float64
	nonEdges float64
	seed     uint64
	seedName string
	flags    *pflag.FlagSet
}

// register adds the flags; seedName names the seed flag of the marks.
func (p *protFlags) register(cmd *cobra.Command, seedName string) {
	f := cmd.Flags()
	p.flags, p.seedName = f, seedName
	f.StringVar(&p.file, "protected", "", "file of protected pairs `a b` (a marks b; may name non-edges)")
	f.Float64Var(&p.sigma, "sigma", 0, "instead of --protected: mark this fraction of edges protected, in [0,1]")
	f.Float64Var(&p.nonEdges, "protect-nonedges", 0, "with --sigma: also mark this fraction of each node's non-edges, in [0,1]")
	f.Uint64Var(&p.seed, seedName, 1, "with --sigma: seed of the synthetic protection marks")
}

func (p *protFlags) changed(name string) bool { return p.flags != nil && p.flags.Changed(name) }

// loadOptional returns the protection set from --protected, from --sigma, or
// (neither given) the marks stored in the snapshot g was loaded from; nil
// when there are none of these.
func (p *protFlags) loadOptional(g *graph.Graph) (*protect.Set, error) {
	hasSigma := p.changed("sigma")
	if !hasSigma {
		for _, name := range []string{"protect-nonedges", p.seedName} {
			if p.changed(name) {
				return nil, fmt.Errorf("--%s requires --sigma", name)
			}
		}
	}
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
	}
	return storedMarks(g), nil
}

// load returns the protection set: from the file, synthetic, stored in the
// snapshot the graph came from, or empty when none of these is given and
// allowEmpty.
func (p *protFlags) load(g *graph.Graph, allowEmpty bool) (*protect.Set, error) {
	s, err := p.loadOptional(g)
	switch {
	case err != nil:
		return nil, err
	case s != nil:
		return s, nil
	case allowEmpty:
		return protect.Empty(g.N()), nil
	}
	return nil, fmt.Errorf("protection marks are required: --protected FILE or --sigma X (or a snapshot that stores marks)")
}

// loadGraphMarks reads --graph and the marks the protection flags select
// (empty marks allowed when allowEmpty).
func loadGraphMarks(cmd *cobra.Command, path string, pf *protFlags, allowEmpty bool) (*graph.Graph, *protect.Set, error) {
	g, _, err := loadGraph(cmd, path)
	if err != nil {
		return nil, nil, err
	}
	prot, err := pf.load(g, allowEmpty)
	if err != nil {
		return nil, nil, err
	}
	return g, prot, nil
}
