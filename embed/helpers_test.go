package embed

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
)

const datasetDir = "../../shared/datasets/"

// loadDataset reads an edge list with a tiny local parser (graph.ReadFile is
// developed elsewhere), relabelling nodes in order of first appearance.
func loadDataset(tb testing.TB, name string) *graph.Graph {
	tb.Helper()
	f, err := os.Open(datasetDir + name)
	if err != nil {
		tb.Skipf("dataset %s not available (%v); skipping", name, err)
	}
	defer f.Close()
	ids := map[string]int32{}
	id := func(s string) int32 {
		if v, ok := ids[s]; ok {
			return v
		}
		ids[s] = int32(len(ids))
		return ids[s]
	}
	var edges []graph.Edge
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		edges = append(edges, graph.Edge{U: id(fs[0]), V: id(fs[1])})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	g, _, err := graph.FromEdges(len(ids), edges, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
