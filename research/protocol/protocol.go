// Package protocol builds the evaluation splits of the paper's experiments
// (paper Section 6): which nodes are queries, which pairs are held out as test
// positives and negatives, which graph test candidates are scored on, which
// pairs are protected, and which pairs (scored on which graph) train the
// monotone transform f. It scores nothing; score, mech and train consume a
// Split.
//
// Three kinds of split exist:
//
//   - Clean (default): the paper's Section 6 made consistent with the privacy
//     model. Held-out positives really are removed from the scoring graph,
//     and f is trained only on non-protected pairs scored on the public graph
//     (privacy-model §5).
//   - Reference: the authors' code exactly (reference-implementation §1),
//     quirks included, for reproducing published numbers only.
//   - Deployment: like Clean, but every non-neighbour of the query in the
//     scoring graph is a candidate, as a deployed recommender would rank.
//
// Every random choice comes from the *rand.Rand passed to Build, so a split is
// reproducible from a seeded generator. Python's random stream cannot be
// reproduced, so a Reference split matches the authors' in distribution and
// in its deterministic parts (query set, counts, filters), not draw for draw.
package protocol

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
)

// Kind selects the protocol.
type Kind int

// The protocols.
const (
	Clean      Kind = iota // paper Section 6, consistent with the privacy model (default)
	Reference              // the authors' code, quirks included (reproduction only)
	Deployment             // Clean, but candidates are all non-neighbours in Test
)

var kindNames = [...]string{"clean", "reference", "deployment"}

// String is the name ParseKind accepts.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind parses "clean", "reference" or "deployment" (case-insensitive).
func ParseKind(s string) (Kind, error) {
	for i, name := range kindNames {
		if strings.EqualFold(s, name) {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("protocol: unknown kind %q (want clean, reference or deployment)", s)
}

// Config parameterises Build. The zero value of QueryFrac, TestFrac and
// DevFrac means the paper's and authors' value (0.8, 0.2, 0.3); Sigma has no
// default (0 means nothing is protected).
type Config struct {
	Kind Kind

	// QueryFrac is the fraction of nodes, taken from the top of the ranking
	// (triangles for Clean/Deployment, |W2| for Reference), that may be queries.
	QueryFrac float64
	// TestFrac is the fraction of a query's neighbours (and, except for
	// Deployment, of its non-neighbours) held out for testing.
	TestFrac float64
	// DevFrac is the fraction of a query's remaining neighbours and
	// non-neighbours used as training (dev) pairs for f.
	DevFrac float64
	// Sigma is the fraction of edges protected.
	Sigma float64
	// NonEdgeFrac (Clean and Deployment only) also protects this fraction of
	// the non-edges (protect.Synthetic). Reference requires 0: the authors
	// never protect non-edges.
	NonEdgeFrac float64
	// MaxNegatives, when > 0, caps the number of test negatives and of dev
	// negatives sampled per query (both are otherwise ~TestFrac·N and
	// ~DevFrac·N per query, i.e. quadratic in N overall). It is for speed on
	// large graphs; with a cap a Reference split no longer follows the
	// authors' sizes. Deployment candidates are never capped.
	MaxNegatives int
	// Marks, when non-nil (Clean and Deployment only), are the protection
	// marks to use instead of drawing Sigma and NonEdgeFrac synthetically;
	// they must have the input graph's node count. Differential tests use
	// it to build splits of u-neighbouring graphs with the same marks.
	Marks *protect.Set
}

// DefaultConfig is the paper's setting: Clean, 0.8 / 0.2 / 0.3, σ = 0.3.
func DefaultConfig() Config {
	return Config{Kind: Clean, QueryFrac: 0.8, TestFrac: 0.2, DevFrac: 0.3, Sigma: 0.3}
}

func (c Config) withDefaults() (Config, error) {
	if c.QueryFrac == 0 {
		c.QueryFrac = 0.8
	}
	if c.TestFrac == 0 {
		c.TestFrac = 0.2
	}
	if c.DevFrac == 0 {
		c.DevFrac = 0.3
	}
	switch {
	case c.Kind < Clean || c.Kind > Deployment:
		return c, fmt.Errorf("protocol: unknown kind %d", int(c.Kind))
	case !(c.QueryFrac > 0 && c.QueryFrac <= 1):
		return c, fmt.Errorf("protocol: query fraction %v not in (0,1]", c.QueryFrac)
	case !(c.TestFrac > 0 && c.TestFrac < 1):
		return c, fmt.Errorf("protocol: test fraction %v not in (0,1)", c.TestFrac)
	case !(c.DevFrac > 0 && c.DevFrac < 1):
		return c, fmt.Errorf("protocol: dev fraction %v not in (0,1)", c.DevFrac)
	case !(c.Sigma >= 0 && c.Sigma <= 1):
		return c, fmt.Errorf("protocol: sigma %v not in [0,1]", c.Sigma)
	case !(c.NonEdgeFrac >= 0 && c.NonEdgeFrac <= 1):
		return c, fmt.Errorf("protocol: non-edge fraction %v not in [0,1]", c.NonEdgeFrac)
	case c.Kind == Reference && c.NonEdgeFrac != 0:
		return c, errors.New("protocol: the reference protocol never protects non-edges (non-edge fraction must be 0)")
	case c.Marks != nil && c.Kind == Reference:
		return c, errors.New("protocol: the reference protocol draws its own marks (Marks must be nil)")
	case c.MaxNegatives < 0:
		return c, fmt.Errorf("protocol: negative cap %d < 0", c.MaxNegatives)
	}
	return c, nil
}

// Split is one evaluation split. All graphs and protection sets share the
// node ids of the input graph. Per-query lists are sorted ascending.
type Split struct {
	Kind   Kind
	Config Config // with defaults filled in

	// Queries are the evaluation queries, ascending by id.
	Queries []int32
	// Test is the graph test candidates are scored on. Clean/Deployment: the
	// input graph minus every held-out test positive. Reference: G_sample,
	// where most held-out positives are still edges (the removal quirk, §1.3).
	Test *graph.Graph
	// Prot are the protection marks, over Test's ids. Reference: the σ share
	// of Test's edges that survive in the authors' Gp (edges only).
	Prot *protect.Set
	// TestPos[i] are query i's held-out positives (edges of the input graph).
	// TestNeg[i] are its sampled test negatives (non-edges of the input
	// graph); empty for Deployment, whose candidates are every non-neighbour
	// in Test (see Candidates).
	TestPos, TestNeg [][]int32

	// Train is the graph training (dev) pairs are scored on. Clean/Deployment:
	// the public graph of Test (protected edges removed) minus the dev
	// positives, so f depends on invariant data only (privacy-model §5); it
	// contains no protected edge. Reference: the authors' G_true_train
	// (G_sample minus dev positives, with the same quirk; protected edges kept).
	Train *graph.Graph
	// TrainQueries index DevPos and DevNeg, ascending. Clean/Deployment:
	// evaluation queries with at least one dev positive and one dev negative.
	// Reference: equal to Queries (the authors train and test on FQ).
	TrainQueries []int32
	// DevPos[i] / DevNeg[i] are TrainQueries[i]'s training pairs. Dev
	// positives are edges of Test and not of Train; dev negatives are
	// non-edges of the input graph, disjoint from the query's test negatives.
	// Clean/Deployment: only non-protected pairs. Reference: as the authors,
	// protected positives included (DPLP trains on all of them, DPLP-Lin on
	// DevPosPublic); dev negatives are never protected there.
	DevPos, DevNeg [][]int32
	// TrainProt are the protection marks to use with Train: the same marks as
	// Prot. In Clean/Deployment no protected pair is an edge of Train, but the
	// marks still say which pairs a neighbouring graph may toggle, so a
	// trainer computes Delta_s(u) and S_max(u) on Train with these marks
	// exactly as a mechanism does on Test with Prot.
	TrainProt *protect.Set

	// Reference only (nil/0 otherwise): the authors' per-query "sensitivity"
	// count a(q) = |N_Gp(q) ∩ N_G(q)| (reference-implementation §3.1) with
	// G = Test for RefA (per Queries index) and G = Train for RefTrainA (per
	// TrainQueries index), and maxD = the maximum degree of Test / Train.
	RefA, RefTrainA           []int
	RefMaxDeg, RefTrainMaxDeg int

	Stats Stats

	ref *refState // Reference only
}

// Stats are the sizes along the way, for reports (compare
// reference-implementation §1.3-§1.6).
type Stats struct {
	Ranked int // int(QueryFrac·N) top-ranked nodes considered
	// SizeFiltered are the ranked nodes whose test lists can be non-empty
	// (Reference: |filtered_queries_test|); DevSizeFiltered is the Reference
	// |filtered_queries_dev|.
	SizeFiltered, DevSizeFiltered int
	// Reference private filters (§1.6): test-side and dev-side survivors.
	TestPrivate, DevPrivate int
	// TestListed (DevListed) counts the test (dev) positive pairs listed
	// over all ranked queries (Reference) or all queries (Clean), (q,v) and
	// (v,q) separately. TestKept (DevKept) are the Reference listed pairs the
	// quirk keeps in the graph, so TestListed − TestKept is what
	// reference-implementation §1.3 calls "removed" (it counts list entries).
	// TestRemoved (DevRemoved) are the undirected edges actually removed;
	// fewer than the surviving entries when both endpoints listed an edge.
	TestListed, TestKept, TestRemoved int64
	DevListed, DevKept, DevRemoved    int64
	// Protected is the number of protected pairs.
	Protected int64
}

// Build makes a split of g. rng drives every random choice, so a seeded rng
// makes the split reproducible (the work is parallel but each query draws
// from its own stream seeded from rng in a fixed order).
func Build(g *graph.Graph, cfg Config, rng *rand.Rand) (*Split, error) {
	if g == nil || g.N() == 0 {
		return nil, errors.New("protocol: empty graph")
	}
	if rng == nil {
		return nil, errors.New("protocol: nil random generator")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Kind == Reference {
		return buildReference(g, cfg, rng)
	}
	return buildClean(g, cfg, rng)
}

// Candidates appends to dst[:0] and returns the candidates of query index i:
// TestPos[i] followed by TestNeg[i] for Clean and Reference, and every
// non-neighbour of the query in Test other than itself (ascending) for
// Deployment. Clean and Deployment candidates are never neighbours in Test;
// Reference candidates can be (the authors' quirk).
func (s *Split) Candidates(i int, dst []int32) []int32 {
	dst = dst[:0]
	if s.Kind != Deployment {
		dst = append(dst, s.TestPos[i]...)
		return append(dst, s.TestNeg[i]...)
	}
	q := s.Queries[i]
	nb := s.Test.Neighbors(q)
	j := 0
	for v := int32(0); int(v) < s.Test.N(); v++ {
		if j < len(nb) && nb[j] == v {
			j++
			continue
		}
		if v != q {
			dst = append(dst, v)
		}
	}
	return dst
}

// Label reports whether v is a held-out positive of query index i.
func (s *Split) Label(i int, v int32) bool { return contains(s.TestPos[i], v) }

// DevPosPublic appends to dst[:0] the dev positives of TrainQueries[i] that
// are not protected (what DPLP-Lin trains on in the Reference protocol; equal
// to DevPos[i] for Clean and Deployment).
func (s *Split) DevPosPublic(i int, dst []int32) []int32 {
	dst = dst[:0]
	q := s.TrainQueries[i]
	for _, v := range s.DevPos[i] {
		if !s.TrainProt.Has(q, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// QueryIndex returns the index of q in Queries.
func (s *Split) QueryIndex(q int32) (int, bool) { return slices.BinarySearch(s.Queries, q) }

// TrainIndex returns the index of q in TrainQueries.
func (s *Split) TrainIndex(q int32) (int, bool) { return slices.BinarySearch(s.TrainQueries, q) }

// frac is the authors' int(f·x): truncation of the float64 product, which is
// also what Python computes.
func frac(f float64, x int) int { return int(f * float64(x)) }

// capNeg applies Config.MaxNegatives.
func capNeg(k, limit int) int {
	if limit > 0 && k > limit {
		return limit
	}
	return k
}
