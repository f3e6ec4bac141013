// Package pipeline is dplp's batch release on Apache Beam, computed by
// joins that scale out. It runs in two modes:
//
//   - Private (Config.Seed nil): each user's noise comes from a generator
//     keyed by crypto/rand on the worker, sampled with the exact base-2
//     sampler (what release.Recommender's SamplerAuto picks for a
//     crypto-seeded release). The pipeline writes NO list: it writes the
//     charges file only (each record a ledger.Release with "seeded":
//     false), and ApplyCharges commits the charges to a ledger store before
//     it writes any list (the single-machine contract: no list leaves
//     unless its charge is durably recorded). Build refuses a private run
//     with a lists file.
//   - Seeded (Config.Seed set; research only, NO privacy guarantee): the
//     same lists, byte for byte, as `dplp recommend --all --seed N --format
//     jsonl` on one machine; lines and charges say "seeded": true, and the
//     ledger records them as seeded (never served).
//
// What makes the seeded outputs identical: the same node ids (graph.Parse's
// canonical order, graph.CompareLabels over the node universe: the labels
// of the edge file, the marks file and the node list; ids.go), the same
// candidate set and the same float scores (the wedge join adds AA/RA terms
// in score.Worker's order, wedges.go), the same Delta_s(u) and S_max(u)
// (from b(u), c(u) and deg(u)), the same model and calib plan, and the same
// generator per user (release.UserRNG(seed, label, 0)), fed to the same
// release.Sampler. Ids, candidates and sensitivities depend only on the
// label set and the pairs, never on how the input files were written.
//
// dplp-list models (variant "dplp-list", docs/privacy-model.md §16) take
// the same joins to another per-user step (ReleaseList, list.go): the
// list.Query release.Recommender builds (public scores, the evidence
// score's s - s_pub, the zero block, deg(u), and L1(u) =
// score.Scorer.Evidence(u, unit).L1 from the sensitivity pairs), released by
// the library's list.Release with the same generator (UserRNG when seeded,
// candidates in id order; crypto noise otherwise), and charged
// accountant.PureList(cost) once per list whatever K, recorded with the
// model's unit; lines carry recommend's "unit" and "eps_list".
//
// When the model records the fingerprint of its training data (meta.data)
// and Config.DataFingerprint is set, the pipeline also writes
// protect.Fingerprint of its input, for the driver to print recommend's
// notice when they differ (fingerprint.go: one worker gathers the encoded
// graph).
//
// Stages (each a Beam transform):
//
//	ReadPairs(edges), ReadPairs(marks)    sharded line reads with positions
//	ReadLabels(nodes)                     the node list (optional)
//	NodeIDs                               distinct labels -> sample -> buckets monotone in CompareLabels; sort per bucket + prefix sum of bucket counts -> ids
//	Resolve(edges), Resolve(marks)        two label joins per file -> (id, id), both orders
//	Nodes                                 per node: label, N(v), prot(v)
//	WithNeighbourDegrees (JC only)        deg and pubDeg of each neighbour
//	Candidates                            wedge join keyed by the middle node, hub-salted
//	Sensitivities                         (u, w) counts through protected pairs -> c(u), b(u)
//	Release                               per user: release.UserInput -> release.Sampler.Sample (seeded or crypto noise)
//	ReleaseList (dplp-list models)        per user: list.Query (public scores, evidence, L1(u)) -> list.Release (list.go)
//	Fingerprint (optional)                protect.Fingerprint of the input, gathered on one worker (fingerprint.go)
//	Finals                                picked ids -> labels (join), JSONL line + charge
//	Write                                 one worker per output shard sorts by user label (bytewise: recommend --all's order) and writes both files
package pipeline

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

// Config is one batch release.
type Config struct {
	Graph     string // edge list (local path, gs://, s3://; .gz/.zst)
	Protected string // protection marks ("" = none); their labels are nodes
	Nodes     string // node list, one label a line ("" = none); its labels are nodes
	Model     []byte // the model file's bytes
	K         int
	// Seed nil: a private release (crypto noise on the workers, exact
	// sampler; Out must be "" and Charges set: see the package doc).
	// Otherwise a seeded research release (no guarantee).
	Seed      *uint64
	Out       string // JSONL lists, one line per user, labels in byte order ("" = none)
	Charges   string // JSONL charges ("" = none)
	RunID     string // idempotency keys are run:<RunID>:<user>
	HubChunk  int    // wedge/sensitivity task block size (0 = DefaultHubChunk)
	OutShards int    // output files (<= 1: exactly Out and Charges; else ShardName(Out, i, OutShards))
	// DataFingerprint: write protect.Fingerprint of the input (the node
	// universe, public graph and marks) to this path, one line, for the
	// driver to compare with the model's meta.data (ReadFingerprint,
	// model.OtherDataNote). "" = not computed; also skipped when the model
	// records no fingerprint (Info.ModelData ""). Gathers the encoded
	// graph on one worker (fingerprint.go).
	DataFingerprint string
}

// DefaultHubChunk is the default salting block: a middle node of degree d
// becomes ceil(d/DefaultHubChunk)^2 tasks.
const DefaultHubChunk = 2048

// Info is what Build learned about the model, and the run's provenance.
type Info struct {
	Kind    score.Kind
	EpsP    float64 // per-pick models' eps_p (0 for dplp-list)
	ModelID string
	Seeded  bool // research run (no guarantee); false: private lists
	// dplp-list models: ListLevel, the privacy unit, the evidence score
	// and the charge of one list.
	ListLevel bool
	Unit      privunit.Unit
	Evidence  score.Kind
	EpsList   float64
	// ModelData is the model's meta.data (protect.Fingerprint of its
	// training data; "" when it records none); Fingerprinted reports
	// whether the run writes Config.DataFingerprint.
	ModelData     string
	Fingerprinted bool
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
	if c.Graph == "" {
		return Info{}, fmt.Errorf("the graph is required")
	}
	if c.Seed == nil {
		if c.Out != "" {
			return Info{}, fmt.Errorf("a private (unseeded) run writes no uncharged lists: leave Out empty and apply the charges file with ApplyCharges, which writes the lists once charged")
		}
		if c.Charges == "" {
			return Info{}, fmt.Errorf("a private (unseeded) run needs the charges file (its only output)")
		}
	} else if c.Out == "" && c.Charges == "" {
		return Info{}, fmt.Errorf("the output path is required")
	}
	id, err := m.ID()
	if err != nil {
		return Info{}, err
	}
	info := Info{Kind: kind, EpsP: m.EpsP, ModelID: id, Seeded: c.Seed != nil, ModelData: m.Meta.Data}
	if m.ListLevel() {
		// The per-pick function samples per-pick mechanisms only (a
		// dplp-list model has no table): list models go to ReleaseList.
		ev, err := score.ParseKind(m.List.Evidence)
		if err != nil {
			return Info{}, fmt.Errorf("model evidence score %q: %w", m.List.Evidence, err)
		}
		if !listSupported(kind, ev) {
			return Info{}, fmt.Errorf("dplp-list model with evidence score %s for score %s: the Beam pipeline releases evidence cn (scores cn, aa, ra, jc) and jc (score jc), what dplp train writes; use dplp recommend --all", ev, kind)
		}
		if err := accountant.CheckEps(m.List.Eps); err != nil {
			return Info{}, fmt.Errorf("model eps per list: %w", err)
		}
		info.ListLevel, info.Unit, info.Evidence, info.EpsList = true, m.PrivacyUnit(), ev, m.List.Eps
	}
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
	universe := []beam.PCollection{Labels(s.Scope("Edges"), edgeLines), Labels(s.Scope("Marks"), markLines)}
	if c.Nodes != "" {
		universe = append(universe, ReadLabels(s.Scope("Nodes"), c.Nodes))
	}
	ids := NodeIDs(s, universe...)
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
	sens := Sensitivities(s, chunk, info.ListLevel, nodes)
	ff := &finalFn{K: c.K, EpsP: m.EpsP, ModelID: id, RunID: c.RunID, Seeded: c.Seed != nil}
	var outs beam.PCollection
	if info.ListLevel {
		outs = ReleaseList(s, kind, c.K, c.Seed, c.Model, info.Unit, info.Evidence, nodes, cands, sens, n)
		ff.Unit, ff.EpsList = info.Unit.String(), info.EpsList
	} else {
		outs = Release(s, kind, c.K, c.Seed, c.Model, nodes, cands, sens, n)
	}
	finals := Finals(s, ff, outs, idLabels)
	Write(s, c.Out, c.Charges, c.OutShards, n, finals)
	if c.DataFingerprint != "" && m.Meta.Data != "" {
		Fingerprint(s, c.DataFingerprint, nodes, n)
		info.Fingerprinted = true
	}
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
	for _, t := range []any{Shard{}, Pair{}, Hashed{}, LabelSample{}, sampleFn{}, bucketFn{}, rankInBucketFn{}, Ranked{}, BucketCount{}, globalIDFn{}, shardOfFn{}, Half{}, Node{}, NbrDeg{}, Nb{}, WedgeTask{}, Contrib{}, Count{},
		Cand{}, SensTask{}, SensInfo{}, UserOut{}, Ref{}, Labeled{}, Final{}, PairCount{}, PartnerCount{}, FPPart{},
		planShardsFn{}, readShardFn{}, resolveFn{}, wedgeTasksFn{}, finishCountFn{}, sensTasksFn{}, sensInfoFn{}, releaseFn{}, listReleaseFn{}, protCountsFn{},
		finalFn{}, writeFn{}, requireEdgesFn{}, fingerprintFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	for _, f := range []any{pairLabels, pairLabelA, finalKey, oneShard, keyFinal, keyByA, bothWays, swapLabel, buildNodeFn,
		sendDegrees, keyNode, attachDegreesFn, countWedgesFn, sumCounts, sumWedgesFn, finishSumFn, sensPairsFn,
		sumPairCounts, pairToUser, refsFn, labelRefsFn, keyUserOut, protLevel, fpPartFn} {
		beam.RegisterFunction(f)
	}
}
