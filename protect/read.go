package protect

import (
	"fmt"
	"io"

	"github.com/dplp/dplp/graph"
)

// ReadFile reads protection marks for g from a file of pairs "a b" (a marks
// b), with the edge-list syntax of graph.Parse (.gz/.zst transparently). A
// marked pair may be a non-edge. An unknown label or a self-mark is an error
// naming the file and line.
func ReadFile(path string, g *graph.Graph) (*Set, error) {
	r, c, err := graph.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return Parse(r, path, g)
}

// Parse is ReadFile on a reader; name is used in error messages.
func Parse(r io.Reader, name string, g *graph.Graph) (*Set, error) {
	var pairs []graph.Edge
	_, err := graph.ScanPairs(r, name, func(line int64, a, b []byte, extra bool) error {
		u, ok := g.ID(string(a))
		if !ok {
			return fmt.Errorf("unknown node label %q (not in the graph)", a)
		}
		v, ok := g.ID(string(b))
		if !ok {
			return fmt.Errorf("unknown node label %q (not in the graph)", b)
		}
		if u == v {
			return fmt.Errorf("node %q cannot protect a pair with itself", a)
		}
		pairs = append(pairs, graph.Edge{U: u, V: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return New(g.N(), pairs)
}

// Write writes the set as one "a b" line per protected pair, in g's labels.
func (s *Set) Write(w io.Writer, g *graph.Graph) error {
	for _, p := range s.Pairs() {
		if _, err := fmt.Fprintf(w, "%s %s\n", g.Label(p.U), g.Label(p.V)); err != nil {
			return err
		}
	}
	return nil
}
