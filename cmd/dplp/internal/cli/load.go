package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/snapshot"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// loadGraph reads --graph (an edge list, or a binary snapshot recognised by
// its magic bytes) through the one loader (snapshot.Open) and prints the
// reader's notes to stderr.
func loadGraph(cmd *cobra.Command, path string) (*graph.Graph, *graph.ReadReport, error) {
	d, err := loadData(cmd, path, nil)
	if err != nil {
		return nil, nil, err
	}
	return d.Graph, d.Report, nil
}

// loadData reads --graph and, when pf is given, --nodes and --protected,
// through snapshot.Open: the node universe is the labels of all three, and
// ids are canonical (docs/privacy-model.md §15). A progress bar shows on
// stderr for large edge lists.
func loadData(cmd *cobra.Command, path string, pf *protFlags) (*snapshot.Dataset, error) {
	if path == "" {
		return nil, fmt.Errorf("--graph FILE is required")
	}
	src := snapshot.Source{Graph: path}
	if pf != nil {
		src.Marks, src.Nodes = pf.file, pf.nodes
	}
	var bar *progress.Bar
	if st, err := os.Stat(path); err == nil && st.Size() > 32<<20 {
		bar = progress.New(st.Size(), "reading "+filepath.Base(path))
		src.Progress = func(n int) { bar.Add(n) }
	}
	d, err := snapshot.Open(src)
	bar.Finish()
	if err != nil {
		return nil, err
	}
	for _, n := range d.Report.Notes() {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	if d.Declared > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %d nodes without edges declared by the node list or the marks file\n", d.Declared)
	}
	return d, nil
}

// deploymentAnnotation marks commands that release lists to users
// (recommend, serve): they refuse marks drawn from the graph itself.
const deploymentAnnotation = "dplp/deployment"

func isDeployment(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[deploymentAnnotation] != "" {
			return true
		}
	}
	return false
}

// protFlags are the shared flags selecting protection marks.
type protFlags struct {
	file     string
	nodes    string
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
	f.StringVar(&p.file, "protected", "", "file of protected pairs `a b` (a marks b; may name non-edges; its labels are nodes even without edges)")
	f.StringVar(&p.nodes, "nodes", "", "node list, one label a line: users who exist with or without edges (the node universe)")
	f.Float64Var(&p.sigma, "sigma", 0, "instead of --protected: mark this fraction of edges protected, in [0,1]")
	f.Float64Var(&p.nonEdges, "protect-nonedges", 0, "with --sigma: also mark this fraction of each node's non-edges, in [0,1]")
	f.Uint64Var(&p.seed, seedName, 1, "with --sigma: seed of the synthetic protection marks")
}

func (p *protFlags) changed(name string) bool { return p.flags != nil && p.flags.Changed(name) }

// loadOptional returns the protection set: from --protected (read with the
// graph by loadData), from --sigma, or (neither given) the marks stored in the
// snapshot the graph came from; nil when there are none of these. Synthetic
// marks (--sigma, or a snapshot written by convert --sigma) are refused on
// deployment commands.
func (p *protFlags) loadOptional(cmd *cobra.Command, d *snapshot.Dataset) (*protect.Set, error) {
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
		return d.Marks, nil
	case hasSigma:
		if err := checkFrac("sigma", p.sigma); err != nil {
			return nil, err
		}
		if err := checkFrac("protect-nonedges", p.nonEdges); err != nil {
			return nil, err
		}
		return protect.Synthetic(d.Graph, p.sigma, p.nonEdges, randx.Derive(p.seed, 0x70726f74))
	}
	if d.SyntheticMarks && isDeployment(cmd) {
		return nil, fmt.Errorf("%s stores synthetic marks (drawn from the graph itself by convert --sigma): a simulation without a guarantee, refused for releases; give --protected FILE", d.Report.Name)
	}
	return d.Marks, nil
}

// synthetic reports whether the marks loadOptional returns for d are drawn
// from the graph itself.
func (p *protFlags) synthetic(d *snapshot.Dataset) bool {
	return p.changed("sigma") || p.file == "" && d.SyntheticMarks
}

// load returns the protection set: from the file, synthetic, stored in the
// snapshot the graph came from, or empty when none of these is given and
// allowEmpty.
func (p *protFlags) load(cmd *cobra.Command, d *snapshot.Dataset, allowEmpty bool) (*protect.Set, error) {
	s, err := p.loadOptional(cmd, d)
	switch {
	case err != nil:
		return nil, err
	case s != nil:
		return s, nil
	case allowEmpty:
		return protect.Empty(d.Graph.N()), nil
	}
	return nil, fmt.Errorf("protection marks are required: --protected FILE or --sigma X (or a snapshot that stores marks)")
}

// loadGraphMarks reads --graph, --nodes and the marks the protection flags
// select (empty marks allowed when allowEmpty).
func loadGraphMarks(cmd *cobra.Command, path string, pf *protFlags, allowEmpty bool) (*graph.Graph, *protect.Set, error) {
	d, err := loadData(cmd, path, pf)
	if err != nil {
		return nil, nil, err
	}
	prot, err := pf.load(cmd, d, allowEmpty)
	if err != nil {
		return nil, nil, err
	}
	return d.Graph, prot, nil
}
