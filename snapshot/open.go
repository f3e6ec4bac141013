package snapshot

import (
	"errors"
	"fmt"
	"io"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
)

// The one loader. Every front end (the CLI's commands, `dplp serve` at start
// and on reload, the audits' representation checks) reads a graph and its
// marks through Open or Read, so the node universe and the numbering are the
// same on every path (docs/privacy-model.md §15):
//
//   - the graph is an edge list (graph.Parse) or a snapshot (recognised by
//     its magic bytes, whatever its name);
//   - the node universe is the labels of the edge list, of the marks file and
//     of the node list (one label a line): a node exists whether or not it
//     has an edge, so a node whose only edges are protected is still a node
//     in every neighbouring graph, and a marks file naming it never fails;
//   - ids are canonical (graph.CompareLabels order over the universe), so
//     they depend only on the set of labels, never on line order.

// Source names a dataset's files.
type Source struct {
	Graph string // edge list or snapshot (required)
	Marks string // protection marks, lines "a b" ("" = none, or the snapshot's own)
	Nodes string // node list, one label a line ("" = none)
	// Progress, when set, is called with the number of bytes read from the
	// graph file as reading proceeds (edge lists only).
	Progress func(n int)
}

// Dataset is a graph with its marks, as loaded.
type Dataset struct {
	Graph *graph.Graph
	// Marks are the protection marks: from the marks file, else those stored
	// in the snapshot, else nil.
	Marks *protect.Set
	// SyntheticMarks reports that Marks came from a snapshot whose marks were
	// drawn from the graph itself (`dplp convert --sigma`): a simulation,
	// which deployment commands refuse.
	SyntheticMarks bool
	// FromSnapshot reports that the graph came from a snapshot file.
	FromSnapshot bool
	// Report says what reading the edge list did (for a snapshot: its build
	// statistics).
	Report *graph.ReadReport
	// Declared is the number of nodes without an edge in the edge list that
	// the node list or the marks file declared.
	Declared int
}

// Open loads the dataset src names.
func Open(src Source) (*Dataset, error) {
	if src.Graph == "" {
		return nil, errors.New("a graph file is required")
	}
	var in Inputs
	isSnap, err := IsSnapshot(src.Graph)
	if err != nil {
		return nil, err
	}
	var base *Dataset
	if isSnap {
		s, err := Load(src.Graph)
		if err != nil {
			return nil, err
		}
		base = &Dataset{Graph: s.Graph, Marks: s.Marks, SyntheticMarks: s.SyntheticMarks, FromSnapshot: true,
			Report: &graph.ReadReport{Name: src.Graph, BuildStats: s.Build}}
	} else {
		r, c, err := graph.OpenProgress(src.Graph, src.Progress)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		in.Edges, in.EdgesName = r, src.Graph
	}
	if src.Marks != "" {
		r, c, err := graph.Open(src.Marks)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		in.Marks, in.MarksName = r, src.Marks
	}
	if src.Nodes != "" {
		r, c, err := graph.Open(src.Nodes)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		in.Nodes, in.NodesName = r, src.Nodes
	}
	return read(base, in)
}

// Inputs are a dataset's streams; Marks and Nodes may be nil. Names are
// used in error messages.
type Inputs struct {
	Edges     io.Reader
	EdgesName string
	Marks     io.Reader
	MarksName string
	Nodes     io.Reader
	NodesName string
}

// Read is Open on streams: an edge list (required), optional marks and an
// optional node list.
func Read(in Inputs) (*Dataset, error) {
	if in.Edges == nil {
		return nil, errors.New("snapshot: an edge list is required")
	}
	return read(nil, in)
}

// read completes base (a snapshot's content) or parses in.Edges, then adds
// the declared node universe and the marks.
func read(base *Dataset, in Inputs) (*Dataset, error) {
	d := base
	if d == nil {
		g, rep, err := graph.Parse(in.Edges, in.EdgesName)
		if err != nil {
			return nil, err
		}
		d = &Dataset{Graph: g, Report: rep}
	}
	g := d.Graph
	n0 := g.N()
	// Labels that are not yet nodes, from the node list and the marks.
	var extra []string
	known := func(b []byte) bool { _, ok := g.ID(string(b)); return ok }
	if in.Nodes != nil {
		if _, err := graph.ScanLabels(in.Nodes, in.NodesName, func(_ int64, l []byte) error {
			if !known(l) {
				extra = append(extra, string(l))
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// Marks between known nodes are kept as ids; the few that name a node
	// not yet in the graph wait as labels until the universe is complete.
	// The file is scanned on all cores, each block into its own part, and
	// the parts put together in file order: the same ids, pending pairs and
	// extra labels, in the same order, as a serial scan.
	var ids []graph.Edge
	var pending []labelPair
	if in.Marks != nil {
		type part struct {
			ids     []graph.Edge
			pending []labelPair
			extra   []string
		}
		if _, err := graph.ScanPairsParallel(in.Marks, in.MarksName, func(p *part, a, b []byte, _ bool) error {
			if string(a) == string(b) {
				return fmt.Errorf("node %q cannot protect a pair with itself", a)
			}
			u, uok := g.ID(string(a))
			v, vok := g.ID(string(b))
			if uok && vok {
				p.ids = append(p.ids, graph.Edge{U: u, V: v})
				return nil
			}
			for _, l := range [][]byte{a, b} {
				if !known(l) {
					p.extra = append(p.extra, string(l))
				}
			}
			p.pending = append(p.pending, labelPair{string(a), string(b)})
			return nil
		}, func(p *part) {
			ids = append(ids, p.ids...)
			pending = append(pending, p.pending...)
			extra = append(extra, p.extra...)
		}); err != nil {
			return nil, err
		}
	}
	if len(extra) > 0 {
		grown, rank, err := graph.WithNodes(g, extra)
		if err != nil {
			return nil, err
		}
		if d.Marks != nil && in.Marks == nil {
			if d.Marks, err = d.Marks.Renumber(grown.N(), rank); err != nil {
				return nil, err
			}
		}
		for i, e := range ids {
			ids[i] = graph.Edge{U: rank[e.U], V: rank[e.V]}
		}
		g = grown
		d.Declared = g.N() - n0
	}
	d.Graph = g
	if in.Marks != nil {
		for _, p := range pending {
			u, _ := g.ID(p.a)
			v, _ := g.ID(p.b)
			ids = append(ids, graph.Edge{U: u, V: v})
		}
		m, err := protect.New(g.N(), ids)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.MarksName, err)
		}
		d.Marks, d.SyntheticMarks = m, false
	}
	return d, nil
}

type labelPair struct{ a, b string }
