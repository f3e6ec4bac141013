package pipeline

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/filter"
	"github.com/dplp/dplp/graph"
)

// Node ids. graph.Parse (and graph.WithNodes, which adds a declared node
// universe) numbers the labels in graph.CompareLabels order: canonical
// decimal labels below 2^31 by value first, then every other label
// bytewise. Ids therefore depend only on the SET of labels, never on line
// order, endpoint order or which line names a node first (docs/privacy-
// model.md: the numbering shapes training and seeded releases). The node
// universe is every label of the edge lines, of the mark lines and of the
// node list: a node whose only edges are protected still exists, and a
// marks label that no edge names is an isolated node.
//
// Scalable ranking: the distinct labels are cut into buckets by a key that
// is monotone in CompareLabels order (the number of split labels <= the
// label, the splits being quantiles of a deterministic sample), counted per
// bucket, and sorted within their bucket on one worker; a label's id is its
// rank in its bucket plus the labels of the earlier buckets (a prefix sum
// over a side input of one count per bucket). Work O(|V| log |V|) spread
// over the buckets; the only gathered data are the sample (IDSampleSize
// labels) and the bucket counts. Because the id is the global rank, the
// sample only affects load balance, never an id.

// IDSampleSize is the number of distinct labels sampled to choose bucket
// boundaries, and IDSamplesPerBucket the sampled labels per bucket (so at
// most IDSampleSize/IDSamplesPerBucket+1 buckets). Variables so that tests
// can force many buckets on small graphs.
var (
	IDSampleSize       = 1 << 14
	IDSamplesPerBucket = 16
)

// Hashed is a label with its sampling hash.
type Hashed struct {
	H     uint64
	Label string
}

// labelHash is a fixed hash of the label (the same on every worker and
// run): FNV-1a with a final mix.
func labelHash(label string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(label))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// LabelSample is the sample accumulator: the (at most N) distinct labels of
// smallest hash seen so far.
type LabelSample struct {
	Items []Hashed
}

// sampleFn keeps the N labels of smallest hash (a bottom-N sketch: a
// uniform sample of the distinct labels, independent of input order and
// of how the runner splits the work). Bytewise selects the order the
// boundaries are chosen in (see compareFor).
type sampleFn struct {
	N, PerBucket int
	Bytewise     bool
}

// compareFor is the order of a ranking: graph.CompareLabels (node ids) or,
// with bytewise, plain byte order (the output order of the lines, which is
// the recommend command's --all order, graph.Graph.ByLabel).
func compareFor(bytewise bool) func(a, b string) int {
	if bytewise {
		return strings.Compare
	}
	return graph.CompareLabels
}

func (f *sampleFn) CreateAccumulator() LabelSample { return LabelSample{} }

func (f *sampleFn) compact(a LabelSample) LabelSample {
	slices.SortFunc(a.Items, func(x, y Hashed) int {
		if c := cmp.Compare(x.H, y.H); c != 0 {
			return c
		}
		return cmp.Compare(x.Label, y.Label)
	})
	a.Items = slices.Compact(a.Items)
	if len(a.Items) > max(f.N, 1) {
		a.Items = a.Items[:max(f.N, 1)]
	}
	return a
}

func (f *sampleFn) AddInput(a LabelSample, label string) LabelSample {
	a.Items = append(a.Items, Hashed{H: labelHash(label), Label: label})
	if len(a.Items) >= 2*max(f.N, 1) {
		a = f.compact(a)
	}
	return a
}

func (f *sampleFn) MergeAccumulators(a, b LabelSample) LabelSample {
	a.Items = append(a.Items, b.Items...)
	return f.compact(a)
}

// ExtractOutput returns the bucket boundaries: every PerBucket-th sampled
// label in CompareLabels order.
func (f *sampleFn) ExtractOutput(a LabelSample) []string {
	a = f.compact(a)
	return splitsOf(a.Items, f.PerBucket, compareFor(f.Bytewise))
}

// splitsOf sorts the sampled labels in order cmp and returns every per-th
// one (from the per-th), the bucket boundaries.
func splitsOf(items []Hashed, per int, cmp func(a, b string) int) []string {
	labels := make([]string, len(items))
	for i, x := range items {
		labels[i] = x.Label
	}
	slices.SortFunc(labels, cmp)
	per = max(per, 1)
	splits := []string{}
	for i := per; i < len(labels); i += per {
		splits = append(splits, labels[i])
	}
	return splits
}

// bucketOf is the bucket of label: the number of boundaries <= label in
// order cmp. It is monotone: cmp(a, b) < 0 implies bucketOf(a) <=
// bucketOf(b).
func bucketOf(splits []string, label string, cmp func(a, b string) int) int64 {
	return int64(sort.Search(len(splits), func(i int) bool { return cmp(splits[i], label) > 0 }))
}

// bucketFn keys every distinct label by its bucket.
type bucketFn struct{ Bytewise bool }

func (f *bucketFn) ProcessElement(label string, splits []string) (int64, string) {
	return bucketOf(splits, label, compareFor(f.Bytewise)), label
}

// Ranked is a label's rank within its bucket.
type Ranked struct {
	Bucket int64
	Rank   int32
	Label  string
}

// BucketCount is the number of labels in a bucket.
type BucketCount struct {
	Bucket int64
	N      int64
}

// rankInBucketFn sorts the labels of one bucket.
type rankInBucketFn struct{ Bytewise bool }

func (f *rankInBucketFn) ProcessElement(bucket int64, it func(*string) bool, emit func(Ranked), count func(BucketCount)) error {
	var all []string
	var l string
	for it(&l) {
		all = append(all, l)
	}
	if len(all) > 1<<31-1 {
		return fmt.Errorf("more than 2^31-1 distinct node labels")
	}
	slices.SortFunc(all, compareFor(f.Bytewise))
	for i, x := range all {
		if i > 0 && all[i-1] == x {
			return fmt.Errorf("label %q twice in bucket %d (internal error)", x, bucket)
		}
		emit(Ranked{Bucket: bucket, Rank: int32(i), Label: x})
	}
	count(BucketCount{Bucket: bucket, N: int64(len(all))})
	return nil
}

// globalIDFn adds the labels of the earlier buckets to the rank.
type globalIDFn struct {
	offsets map[int64]int64
}

func (f *globalIDFn) ProcessElement(r Ranked, counts func(*BucketCount) bool, emit func(string, int32)) error {
	if f.offsets == nil {
		var cs []BucketCount
		var c BucketCount
		for counts(&c) {
			cs = append(cs, c)
		}
		slices.SortFunc(cs, func(a, b BucketCount) int { return cmp.Compare(a.Bucket, b.Bucket) })
		f.offsets = make(map[int64]int64, len(cs))
		var sum int64
		for _, c := range cs {
			f.offsets[c.Bucket] = sum
			sum += c.N
		}
		if sum > 1<<31-1 {
			return fmt.Errorf("%d distinct node labels: more than 2^31-1", sum)
		}
	}
	off, ok := f.offsets[r.Bucket]
	if !ok {
		return fmt.Errorf("no label count for bucket %d (internal error)", r.Bucket)
	}
	emit(r.Label, int32(off+int64(r.Rank)))
	return nil
}

// pairLabels emits both labels of a line (self-loops included: graph.Parse
// gives a node seen only in a self-loop an id too).
func pairLabels(p Pair, emit func(string)) {
	emit(p.A)
	emit(p.B)
}

// Labels returns the labels named by lines (both columns; duplicates kept).
func Labels(s beam.Scope, lines beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("Labels"), pairLabels, lines)
}

// NodeIDs assigns graph.Parse's canonical ids (CompareLabels order) to the
// node universe: the union of the given PCollections of labels (edge
// labels, mark labels, node-list labels; duplicates allowed). The result
// is (label, id) with ids 0..|V|-1, a function of the label set alone.
func NodeIDs(s beam.Scope, labels ...beam.PCollection) beam.PCollection {
	s = s.Scope("NodeIDs")
	all := labels[0]
	if len(labels) > 1 {
		all = beam.Flatten(s, labels...)
	}
	return rankLabels(s, filter.Distinct(s, all), false)
}

// rankLabels returns (label, rank) for distinct labels, ranks 0..n-1 in
// CompareLabels order (bytewise: byte order): the sample, buckets, sort
// per bucket and prefix sum described above.
func rankLabels(s beam.Scope, distinct beam.PCollection, bytewise bool) beam.PCollection {
	splits := beam.Combine(s, &sampleFn{N: IDSampleSize, PerBucket: IDSamplesPerBucket, Bytewise: bytewise}, distinct)
	keyed := beam.ParDo(s, &bucketFn{Bytewise: bytewise}, distinct, beam.SideInput{Input: splits})
	ranked, counts := beam.ParDo2(s, &rankInBucketFn{Bytewise: bytewise}, beam.GroupByKey(s, keyed))
	return beam.ParDo(s, &globalIDFn{}, ranked, beam.SideInput{Input: counts})
}

// Half is a line with one endpoint resolved.
type Half struct {
	Pos   int64
	ID    int32
	Other string
}

func keyByA(p Pair) (string, Half) { return p.A, Half{Pos: p.Pos, Other: p.B} }

// resolveFn joins a label's id with the lines naming it.
type resolveFn struct {
	Path  string
	Marks bool // protection marks: self-marks are errors
	Final bool // second endpoint: emit (id, id) pairs
}

func (f *resolveFn) ProcessElement(label string, ids func(*int32) bool, halves func(*Half) bool, emitHalf func(string, Half), emitEdge func(int32, int32)) error {
	var id int32
	found := ids(&id)
	var h Half
	for halves(&h) {
		if !found {
			// Every label of the edge and marks files is in the node
			// universe, so this cannot happen.
			return fmt.Errorf("%s: label %q has no id (internal error)", describePos(f.Path, h.Pos), label)
		}
		if !f.Final {
			emitHalf(h.Other, Half{Pos: h.Pos, ID: id, Other: label})
			continue
		}
		if f.Marks && h.ID == id {
			return fmt.Errorf("%s: node %q cannot protect a pair with itself", describePos(f.Path, h.Pos), label)
		}
		emitEdge(h.ID, id)
	}
	return nil
}

// Resolve turns lines into (id, id) pairs, both orders, self-loops dropped
// (edges) or refused (marks).
func Resolve(s beam.Scope, path string, marks bool, ids, lines beam.PCollection) beam.PCollection {
	s = s.Scope("Resolve")
	a := beam.CoGroupByKey(s, ids, beam.ParDo(s, keyByA, lines))
	halves, _ := beam.ParDo2(s, &resolveFn{Path: path, Marks: marks}, a)
	b := beam.CoGroupByKey(s, ids, halves)
	_, pairs := beam.ParDo2(s, &resolveFn{Path: path, Marks: marks, Final: true}, b)
	return beam.ParDo(s, bothWays, pairs)
}

func bothWays(u, v int32, emit func(int32, int32)) {
	if u == v {
		return // self-loop: dropped (its labels still have ids)
	}
	emit(u, v)
	emit(v, u)
}
