package release

import (
	"slices"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// InfluencersForTest exposes the influence sets to the external tests.
func InfluencersForTest(g *graph.Graph, p *protect.Set, k score.Kind, u int32) ([]int32, bool) {
	return newInfluence(g, p, k, NewInfluenceDict(g)).ids(u)
}

// InfluencerLabelsForTest exposes the labels a release records.
func InfluencerLabelsForTest(g *graph.Graph, p *protect.Set, k score.Kind, u int32) []string {
	ids, all := newInfluence(g, p, k, NewInfluenceDict(g)).ids(u)
	if all {
		return []string{Everyone}
	}
	out := make([]string, len(ids))
	for i, w := range ids {
		out[i] = g.Label(w)
	}
	slices.Sort(out)
	return out
}

// InfluenceDictMadeForTest reports whether d has been made.
func InfluenceDictMadeForTest(d *InfluenceDict) bool { return d.dict != nil }

// RecordedInfluencersForTest is the influencer labels of the release
// record of u (as handed to the ledger: blocks, node ids or labels,
// expanded by ledger.Release.InfluencerLabels) and whether it uses blocks.
func RecordedInfluencersForTest(g *graph.Graph, p *protect.Set, k score.Kind, u int32) ([]string, bool) {
	var rel ledger.Release
	newInfluence(g, p, k, NewInfluenceDict(g)).record(&rel, u)
	return rel.InfluencerLabels(), rel.InflBlocks != nil
}

// SetPrepareMinForTest sets the batch size from which Stream has the store
// record the influence blocks first, and returns a function restoring it.
func SetPrepareMinForTest(n int) func() {
	old := prepareMin
	prepareMin = n
	return func() { prepareMin = old }
}

// SetReadyMaxForTest sets the number of sampled windows Stream keeps while
// the store records the influence blocks (both of readyWindows' bounds),
// and returns a function restoring them.
func SetReadyMaxForTest(n int) func() {
	oldMin, oldMax := readyMin, readyMax
	readyMin, readyMax = n, n
	return func() { readyMin, readyMax = oldMin, oldMax }
}

// ReadyWindowsForTest is readyWindows for n users in windows of 4,096.
func ReadyWindowsForTest(n int) int { return readyWindows(n, 4096) }

// GuaranteesForTest returns r's guarantee of (picks, seeded) as the cache
// gives it and as computed afresh.
func GuaranteesForTest(r *Recommender, picks int, seeded bool) (cached, fresh Guarantee) {
	return r.guarantee(picks, seeded), r.newGuarantee(picks, seeded)
}

// GuaranteeTableLenForTest is the number of picks counts r's guarantee
// table holds.
func GuaranteeTableLenForTest(r *Recommender) int {
	if t := r.guarantees.tab.Load(); t != nil {
		return len(t[0])
	}
	return 0
}

// SetNoLazyForTest turns calib.Plan.SampleScores, SampleScoresKeyed and
// SampleWalk off in Sample (the eager paths; a seeded keyed list then
// comes from SampleKeyed, not from the walk) until the returned function
// restores it.
func SetNoLazyForTest(off bool) (restore func()) {
	old := noLazy
	noLazy = off
	return func() { noLazy = old }
}

// SetAlwaysPublicForTest has releases compute the public scores even when
// the plan does not read them (score.Worker.Score instead of ScoreNoPublic).
func SetAlwaysPublicForTest(on bool) (restore func()) {
	old := alwaysPublic
	alwaysPublic = on
	return func() { alwaysPublic = old }
}
