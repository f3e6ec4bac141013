package ledger

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSortIDs: sortIDs sorts like slices.Sort for any length (the
// comparison fallback below 64 included) and any value range (1 to 4 byte
// passes, and the comparison sort beyond), reusing and growing its scratch.
func TestSortIDs(t *testing.T) {
	var tmp []int64
	rapid.Check(t, func(t *rapid.T) {
		bits := rapid.IntRange(1, 62).Draw(t, "bits")
		a := rapid.SliceOfN(rapid.Map(rapid.Int64Range(1, 1<<62), func(x int64) int64 { return max(1, x>>(62-bits)) }), 0, 3000).Draw(t, "a")
		want := slices.Clone(a)
		slices.Sort(want)
		if got := sortIDs(a, &tmp); !slices.Equal(got, want) {
			t.Fatalf("sortIDs = %v, want %v", got, want)
		}
	})
}

// TestDictMatchesLabels: a release naming its influencers through a Dict
// (any order, repeats) records exactly the set the same release with the
// labels records: the same blob, read back as the same sorted labels, the
// same exposure; whether the labels are new to the store, known to the
// handle's cache, or known only to the database (a second handle), and in
// batches that mix both forms. Stores at schema 7 (JSON arrays) and 8
// (uvarint deltas) take dictionary releases too.
func TestDictMatchesLabels(t *testing.T) {
	ctx := context.Background()
	labels := []string{"10", "9", "a", "b\u00e9", "200", "3", "x y", "0"}
	d, err := NewDict(len(labels), func(i int32) string { return labels[i] })
	if err != nil {
		t.Fatal(err)
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		for _, schema := range []int{partySchema, labelSchema, LatestSchema} {
			t.Run("schema"+strconv.Itoa(schema), func(t *testing.T) {
				dsn := fx.dsn(t)
				a := openAtT(t, dsn, schema)
				b := openAtT(t, dsn, schema) // second handle: empty cache
				var rs []Release
				rapidSeed := []int32{3, 0, 3, 7, 1, 6, 2, 5, 4}
				for n := range 12 {
					idx := rapidSeed[:1+n%len(rapidSeed)]
					rs = append(rs,
						Release{User: "d" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, InflDict: d, InflIdx: slices.Clone(idx)},
						Release{User: "l" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, Influencers: d.labels(idx)})
				}
				for i, st := range []Store{a, b, a, b} {
					part := rs[i*6 : i*6+6]
					res, err := st.ChargeBatch(ctx, part, Unlimited)
					if err != nil {
						t.Fatal(err)
					}
					for j, r := range res {
						if r.Err != nil || !r.Fresh {
							t.Fatalf("item %d: %+v", j, r)
						}
						if got, want := r.Release.InfluencerLabels(), d.labelsOrSelf(part[j]); !slices.Equal(got, want) {
							t.Fatalf("item %d: InfluencerLabels %q, want %q", j, got, want)
						}
					}
				}
				for n := range 12 {
					rd, _, err := a.Latest(ctx, "d"+strconv.Itoa(n), "m", 2, Crypto)
					if err != nil {
						t.Fatal(err)
					}
					rl, _, err := b.Latest(ctx, "l"+strconv.Itoa(n), "m", 2, Crypto)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(rd.Influencers, rl.Influencers) || len(rd.Influencers) == 0 || rd.InflIdx != nil {
						t.Fatalf("release %d: dictionary form reads back as %q, labels as %q", n, rd.Influencers, rl.Influencers)
					}
				}
				exp, err := a.Exposure(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range exp {
					// Every party's exposure counts its dictionary and label
					// releases alike: an even number of 0.1s.
					if k := e.Eps / 0.2; k < 0.999 || k-float64(int(k+0.5)) > 1e-9 || float64(int(k+0.5))-k > 1e-9 {
						t.Fatalf("exposure of %q: %v, not a whole number of pairs", e.Party, e.Eps)
					}
				}
			})
		}
	})
}

// openAtT opens dsn migrated up to schema version upto,
// closed at cleanup.
func openAtT(t *testing.T, dsn string, upto int) Store {
	t.Helper()
	s, err := openAt(context.Background(), dsn, upto, OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// labelsOrSelf is the influencer labels a release names, sorted.
func (d *Dict) labelsOrSelf(r Release) []string {
	if r.InflIdx != nil {
		return d.labels(r.InflIdx)
	}
	return r.Influencers
}

// TestDictInvalid: an index out of range, an invalid label in the
// dictionary (checked when it is made, reported when a release names it),
// both forms at once, and indices without a dictionary are invalid, and
// the rest of the batch is charged.
func TestDictInvalid(t *testing.T) {
	ctx := context.Background()
	labels := []string{"ok", "", "bad\x00", "*", "\xff"}
	d, err := NewDict(len(labels), func(i int32) string { return labels[i] })
	if err != nil {
		t.Fatal(err)
	}
	st := openAtT(t, sqliteFixture.dsn(t), LatestSchema)
	cases := []struct {
		r    Release
		want string
	}{
		{Release{InflDict: d, InflIdx: []int32{0, 5}}, "index 5 outside"},
		{Release{InflDict: d, InflIdx: []int32{-1}}, "index -1 outside"},
		{Release{InflDict: d, InflIdx: []int32{0, 1}}, "empty influencer"},
		{Release{InflDict: d, InflIdx: []int32{2}}, "NUL"},
		{Release{InflDict: d, InflIdx: []int32{3}}, "reserved"},
		{Release{InflDict: d, InflIdx: []int32{4}}, "UTF-8"},
		{Release{InflDict: d, InflIdx: []int32{0}, Influencers: []string{"ok"}}, "both"},
		{Release{InflIdx: []int32{0}}, "without a dictionary"},
		{Release{InflDict: d, InflIdx: []int32{0}}, ""},
	}
	var rs []Release
	for i, c := range cases {
		c.r.User, c.r.Model, c.r.K, c.r.Cost = "u"+strconv.Itoa(i), "m", 1, 0.5
		rs = append(rs, c.r)
	}
	res, err := st.ChargeBatch(ctx, rs, Unlimited)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		switch {
		case c.want == "" && (res[i].Err != nil || !res[i].Fresh):
			t.Errorf("case %d: %v", i, res[i].Err)
		case c.want != "" && (res[i].Err == nil || !strings.Contains(res[i].Err.Error(), c.want)):
			t.Errorf("case %d: error %v, want one containing %q", i, res[i].Err, c.want)
		}
	}
	if _, err := NewDict(-1, labels2); err == nil {
		t.Error("negative size accepted")
	}
	if _, err := NewDict(1, nil); err == nil {
		t.Error("nil label function accepted")
	}
}

func labels2(i int32) string { return "x" }
