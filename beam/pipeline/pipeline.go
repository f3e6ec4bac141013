// Package pipeline is dplp's batch release on Apache Beam: the same lists,
// byte for byte, as `dplp recommend --all --seed N --format jsonl` on one
// machine, computed by joins that scale out.
//
// What makes the outputs identical: the same node ids (graph.Parse's order
// of first appearance, ids.go), the same candidate set and the same float
// scores (the wedge join adds AA/RA terms in score.Worker's order,
// wedges.go), the same Delta_s(u) and S_max(u) (from b(u), c(u) and
// deg(u)), the same model and calib plan, and the same generator per user
// (release.UserRNG(seed, label, 0)), fed to the same release.Sampler.
//
// Stages (each a Beam transform):
//
//	ReadPairs(edges), ReadPairs(marks)    sharded line reads with positions
//	NodeIDs                               earliest position per label; rank per shard + prefix sum of shard counts -> ids
//	Resolve(edges), Resolve(marks)        two label joins per file -> (id, id), both orders
//	Nodes                                 per node: label, N(v), prot(v)
//	WithNeighbourDegrees (JC only)        deg and pubDeg of each neighbour
//	Candidates                            wedge join keyed by the middle node, hub-salted
//	Sensitivities                         (u, w) counts through protected pairs -> c(u), b(u)
//	Release                               per user: release.UserInput -> release.Sampler.Sample
//	Finals                                picked ids -> labels (join), JSONL line + charge
//	Write                                 one worker sorts by user id and writes both files
package pipeline

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/dplp/dplp/score"
)

// Config is one batch release.
type Config struct {
	Graph     string // edge list (local path, gs://, s3://; .gz/.zst)
	Protected string // protection marks ("" = none)
	Model     []byte // the model file's bytes
	K         int
	Seed      uint64
	Out       string // JSONL lists, one line per user in id order
	Charges   string // JSONL charges ("" = none)
	RunID     string // idempotency keys are run:<RunID>:<user>
	HubChunk  int    // wedge/sensitivity task block size (0 = DefaultHubChunk)
	OutShards int    // output files (<= 1: exactly Out and Charges; else ShardName(Out, i, OutShards))
}

// DefaultHubChunk is the default salting block: a middle node of degree d
// becomes ceil(d/DefaultHubChunk)^2 tasks.
const DefaultHubChunk = 2048

// Info is what Build learned about the model.
type Info struct {
	Kind    score.Kind
	EpsP    float64
	ModelID string
}

// Build adds the batch release to s.
func Build(s beam.Scope, c Config) (Info, error) {
	m, err := loadModel(c.Model)
	if err != nil {
		return Info{}, err
	}
	kind, err := score.ParseKind(m.Score)
	if err != nil {
		return Info{}, fmt.Errorf("model score %q: %w (the Beam pipeline computes triad scores only)", m.Score, err)
	}
	switch kind {
	case score.CN, score.AA, score.RA, score.JC:
	default:
		return Info{}, fmt.Errorf("model score %s: the Beam pipeline supports cn, aa, ra and jc (pa's candidate set is every non-neighbour, so it has no wedge join)", kind)
	}
	if c.K < 1 {
		return Info{}, fmt.Errorf("k must be >= 1, got %d", c.K)
	}
	if c.Out == "" || c.Graph == "" {
		return Info{}, fmt.Errorf("the graph and the output path are required")
	}
	id, err := m.ID()
	if err != nil {
		return Info{}, err
	}
	info := Info{Kind: kind, EpsP: m.EpsP, ModelID: id}
	chunk := c.HubChunk
	if chunk <= 0 {
		chunk = DefaultHubChunk
	}

	edgeLines := ReadPairs(s.Scope("Edges"), c.Graph)
	var markLines beam.PCollection
	if c.Protected != "" {
		markLines = ReadPairs(s.Scope("Marks"), c.Protected)
	} else {
		markLines = beam.CreateList(s, []Pair{})
	}
	ids := NodeIDs(s, edgeLines)
	n := stats.CountElms(s, ids)
	edges := Resolve(s.Scope("Edges"), c.Graph, false, ids, edgeLines)
	marks := Resolve(s.Scope("Marks"), c.Protected, true, ids, markLines)
	beam.ParDo0(s, &requireEdgesFn{Path: c.Graph}, stats.CountElms(s, edges))
	idLabels := beam.ParDo(s, swapLabel, ids)
	nodes := Nodes(s, idLabels, edges, marks)
	scored := nodes
	if kind == score.JC {
		scored = WithNeighbourDegrees(s, nodes)
	}
	cands := Candidates(s, kind, chunk, scored)
	sens := Sensitivities(s, chunk, nodes)
	outs := Release(s, kind, c.K, c.Seed, c.Model, nodes, cands, sens, n)
	finals := Finals(s, &finalFn{K: c.K, EpsP: m.EpsP, ModelID: id, RunID: c.RunID}, outs, idLabels)
	Write(s, c.Out, c.Charges, c.OutShards, n, finals)
	return info, nil
}

// requireEdgesFn fails the pipeline when the graph has no edge, as
// graph.Parse does (no edge lines, or only self-loops).
type requireEdgesFn struct{ Path string }

func (f *requireEdgesFn) ProcessElement(n int) error {
	if n == 0 {
		return fmt.Errorf("%s: empty graph (no edge lines, or every line a self-loop)", f.Path)
	}
	return nil
}

func init() {
	for _, t := range []any{Shard{}, Pair{}, LabelPos{}, Ranked{}, ShardCount{}, globalIDFn{}, Half{}, Node{}, NbrDeg{}, Nb{}, WedgeTask{}, Contrib{}, Count{},
		Cand{}, SensTask{}, SensInfo{}, UserOut{}, Ref{}, Labeled{}, Final{},
		planShardsFn{}, readShardFn{}, resolveFn{}, wedgeTasksFn{}, finishCountFn{}, sensTasksFn{}, releaseFn{}, finalFn{}, writeFn{}, shardKeyFn{}, requireEdgesFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	for _, f := range []any{firstPositions, minInt64, byFirstShard, rankInShardFn, keyByA, bothWays, swapLabel, buildNodeFn,
		sendDegrees, keyNode, attachDegreesFn, countWedgesFn, sumCounts, sumWedgesFn, finishSumFn, sensPairsFn,
		sumInt32, pairToUser, sensInfoFn, refsFn, labelRefsFn, keyUserOut} {
		beam.RegisterFunction(f)
	}
}
