package pipeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dplp/dplp/graph"
)

func init() { beam.RegisterFunction(formatID) }

func formatID(label string, id int32) string { return fmt.Sprintf("%d %s", id, label) }

// labelMix is a label set that exercises every rule of CompareLabels:
// canonical decimals (dense and sparse, up to 2^31-1), decimals that are
// not canonical (leading zeros, a sign, 2^31 and above: bytewise labels),
// strings sharing a long prefix, UTF-8.
func labelMix(rng *rand.Rand, n int) []string {
	fixed := []string{"0", "1", "9", "10", "2147483647", "2147483648", "4294967296", "007", "00", "-1", "+3",
		"a", "A", "user", "user-", "ü", "Ω1", "z"}
	out := append([]string{}, fixed...)
	for i := range n {
		switch i % 5 {
		case 0:
			out = append(out, fmt.Sprint(rng.IntN(1<<31)))
		case 1:
			out = append(out, fmt.Sprint(rng.IntN(1000)))
		case 2:
			out = append(out, fmt.Sprintf("user-%d", rng.IntN(100000)))
		case 3:
			out = append(out, fmt.Sprintf("0%d", rng.IntN(1000)))
		default:
			out = append(out, fmt.Sprintf("ü%d", rng.IntN(1000)))
		}
	}
	return out
}

// canonicalIDs is the expected numbering: rank in CompareLabels order of
// the distinct labels.
func canonicalIDs(labels []string) []string {
	d := slices.Clone(labels)
	slices.SortFunc(d, graph.CompareLabels)
	d = slices.Compact(d)
	out := make([]string, len(d))
	for i, l := range d {
		out[i] = fmt.Sprintf("%d %s", i, l)
	}
	return out
}

// NodeIDs numbers the union of its inputs in CompareLabels order, for any
// bucketing (one bucket, many tiny buckets, the defaults), with labels
// repeated within and across inputs.
func TestNodeIDsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mix := labelMix(rng, 300)
	dense := make([]string, 0, 400)
	for _, i := range rng.Perm(200) {
		dense = append(dense, fmt.Sprint(i), fmt.Sprint(199-i))
	}
	cases := []struct {
		name        string
		inputs      [][]string
		sample, per int
	}{
		{"dense decimals, buckets of 2", [][]string{dense}, 8, 2},
		{"mixed, one sample per bucket", [][]string{mix[:200], mix[150:], {"only-in-nodes", "5"}}, 64, 1},
		{"mixed, defaults", [][]string{mix, mix[:10]}, 1 << 14, 16},
		{"mixed, one bucket", [][]string{mix}, 1, 16},
		{"single label", [][]string{{"x"}, {"x"}}, 4, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var all []string
			for _, in := range c.inputs {
				all = append(all, in...)
			}
			want := canonicalIDs(all)
			// Non-vacuous: the inputs' first-appearance order is not the
			// canonical one (except for the one-label case).
			if len(want) > 1 {
				first := slices.Clone(all)
				seen := map[string]bool{}
				first = slices.DeleteFunc(first, func(l string) bool { d := seen[l]; seen[l] = true; return d })
				if slices.IsSortedFunc(first, graph.CompareLabels) {
					t.Fatal("test inputs already in canonical order: the test could not fail")
				}
			}
			oldS, oldP := IDSampleSize, IDSamplesPerBucket
			IDSampleSize, IDSamplesPerBucket = c.sample, c.per
			defer func() { IDSampleSize, IDSamplesPerBucket = oldS, oldP }()
			p, s := beam.NewPipelineWithRoot()
			var cols []beam.PCollection
			for _, in := range c.inputs {
				cols = append(cols, beam.CreateList(s, in))
			}
			ids := beam.ParDo(s, formatID, NodeIDs(s, cols...))
			passert.Equals(s, ids, toAny(want)...)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// The bucket key is monotone in CompareLabels order whatever the sample,
// and the sample (hence the buckets) does not depend on how the labels are
// split among accumulators or in which order they arrive.
func TestBucketsMonotoneAndOrderFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	labels := labelMix(rng, 2000)
	type tc struct {
		n, per   int
		bytewise bool
	}
	for _, c := range []tc{{1, 1, false}, {16, 1, false}, {64, 4, false}, {1 << 14, 16, false}, {100, 1000, false}, {16, 1, true}, {64, 4, true}} {
		f := &sampleFn{N: c.n, PerBucket: c.per, Bytewise: c.bytewise}
		order := compareFor(c.bytewise)
		acc := f.CreateAccumulator()
		for _, l := range labels {
			acc = f.AddInput(acc, l)
		}
		splits := f.ExtractOutput(acc)
		// The same labels, shuffled, in three accumulators merged.
		perm := rng.Perm(len(labels))
		parts := []LabelSample{f.CreateAccumulator(), f.CreateAccumulator(), f.CreateAccumulator()}
		for i, j := range perm {
			parts[i%3] = f.AddInput(parts[i%3], labels[j])
		}
		merged := f.MergeAccumulators(f.MergeAccumulators(parts[2], parts[0]), parts[1])
		if got := f.ExtractOutput(merged); !slices.Equal(got, splits) {
			t.Errorf("sample %d/%d: splits depend on the input order:\n%q\n%q", c.n, c.per, got, splits)
		}
		if !slices.IsSortedFunc(splits, order) {
			t.Errorf("sample %d/%d: splits not in CompareLabels order: %q", c.n, c.per, splits)
		}
		sorted := slices.Clone(labels)
		slices.SortFunc(sorted, order)
		if a, b, ok := monotone(sorted, func(l string) int64 { return bucketOf(splits, l, order) }); !ok {
			t.Fatalf("sample %d/%d: bucket(%q) > bucket(%q)", c.n, c.per, a, b)
		}
		buckets := map[int64]bool{}
		for _, l := range sorted {
			buckets[bucketOf(splits, l, order)] = true
		}
		if want := min(c.n, len(labels)) / c.per; c.per <= c.n && len(buckets) < want/2 {
			t.Errorf("sample %d/%d: only %d buckets used, want about %d", c.n, c.per, len(buckets), want)
		}
		// Negative control: the same splits searched bytewise (the order a
		// naive implementation would use) are not monotone in
		// CompareLabels order, and the check says so.
		if c.per == 1 && c.n >= 16 && !c.bytewise {
			bytewise := slices.Clone(splits)
			slices.Sort(bytewise)
			key := func(l string) int64 {
				i, _ := slices.BinarySearch(bytewise, l)
				return int64(i)
			}
			if _, _, ok := monotone(sorted, key); ok {
				t.Errorf("sample %d/%d: a bytewise bucket key passed the monotonicity check", c.n, c.per)
			}
		}
	}
}

// monotone reports whether key is non-decreasing along sorted, and the
// first offending pair if not.
func monotone(sorted []string, key func(string) int64) (string, string, bool) {
	for i := 1; i < len(sorted); i++ {
		if key(sorted[i-1]) > key(sorted[i]) {
			return sorted[i-1], sorted[i], false
		}
	}
	return "", "", true
}
