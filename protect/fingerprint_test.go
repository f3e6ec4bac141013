package protect

import (
	"testing"

	"github.com/dplp/dplp/graph"
)

// TestFingerprint: neighbouring graphs (a protected edge toggled) share a
// fingerprint; a public edge, a mark or a label changes it.
func TestFingerprint(t *testing.T) {
	build := func(edges []graph.Edge, labels []string) *graph.Graph {
		g, _, err := graph.FromEdges(5, edges, labels)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	base := []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}, {U: 3, V: 4}}
	marks, err := New(5, []graph.Edge{{U: 1, V: 2}, {U: 0, V: 4}})
	if err != nil {
		t.Fatal(err)
	}
	g := build(base, nil)
	f := Fingerprint(g, marks)
	// Toggling protected pairs: {1,2} removed, {0,4} added.
	gp := build([]graph.Edge{{U: 0, V: 1}, {U: 2, V: 3}, {U: 3, V: 4}, {U: 0, V: 4}}, nil)
	if Fingerprint(gp, marks) != f {
		t.Fatal("a neighbouring graph has another fingerprint")
	}
	other, _ := New(5, []graph.Edge{{U: 1, V: 2}})
	for name, got := range map[string]string{
		"public edge removed": Fingerprint(build([]graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}, {U: 2, V: 3}}, nil), marks),
		"mark removed":        Fingerprint(g, other),
		"labels changed":      Fingerprint(build(base, []string{"0", "1", "2", "3", "x"}), marks),
		"no marks":            Fingerprint(g, nil),
	} {
		if got == f {
			t.Errorf("%s: same fingerprint", name)
		}
	}
}
