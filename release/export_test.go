package release

import (
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// InfluencersForTest exposes the influence sets to the external tests.
func InfluencersForTest(g *graph.Graph, p *protect.Set, k score.Kind, u int32) ([]int32, bool) {
	return newInfluence(g, p, k, NewLabelOrder(g)).ids(u)
}

// InfluencerLabelsForTest exposes the labels a release records.
func InfluencerLabelsForTest(g *graph.Graph, p *protect.Set, k score.Kind, u int32) []string {
	return newInfluence(g, p, k, NewLabelOrder(g)).of(u)
}

// InfluencerLabelsWithOrderForTest is InfluencerLabelsForTest through a
// given (possibly shared) label order.
func InfluencerLabelsWithOrderForTest(o *LabelOrder, p *protect.Set, k score.Kind, u int32) []string {
	return newInfluence(o.g, p, k, o).of(u)
}

// LabelOrderBuiltForTest reports whether o has been built.
func LabelOrderBuiltForTest(o *LabelOrder) bool { return o.rank != nil }
