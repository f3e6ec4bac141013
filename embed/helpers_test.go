package embed

import (
	"os"
	"testing"

	"github.com/dplp/dplp/graph"
)

const datasetDir = "../../shared/datasets/"

// loadDataset reads one of the paper's graphs with the project's parser,
// skipping the test when the file is absent.
func loadDataset(tb testing.TB, name string) *graph.Graph {
	tb.Helper()
	if _, err := os.Stat(datasetDir + name); err != nil {
		tb.Skipf("dataset %s not available (%v); skipping", name, err)
	}
	g, _, err := graph.ReadFile(datasetDir + name)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
