package ledger

import (
	"context"
	"crypto/sha256"
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
// (any order, repeats) or as Blocks minus exclusions records exactly the set
// the same release with the labels records: read back as the same sorted
// labels, with the same exposure; whether the labels and blocks are new to
// the store, known to the handle's caches, or known only to the database
// (a second handle), and in batches that mix every form. Stores at schemas
// 7 (JSON arrays), 8 (uvarint deltas) and 9 take both forms too (expanded);
// from schema 10 block forms are stored block-coded, and Verify passes;
// also when the handles preload every label and block id.
func TestDictMatchesLabels(t *testing.T) {
	ctx := context.Background()
	labels := []string{"10", "9", "a", "b\u00e9", "200", "3", "x y", "0"}
	d, blocks := testBlocks(t, labels)
	defer func(m int) { preloadMin = m }(preloadMin)
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		for _, schema := range []int{partySchema, labelSchema, efSchema, LatestSchema, -LatestSchema} {
			// -LatestSchema: handles preload every label and block id
			// first (preloadMin reached).
			preloadMin = 1 << 16
			if schema < 0 {
				schema, preloadMin = -schema, 1
			}
			t.Run("schema"+strconv.Itoa(schema)+"-preload"+strconv.Itoa(preloadMin), func(t *testing.T) {
				dsn := fx.dsn(t)
				a := openAtT(t, dsn, schema)
				b := openAtT(t, dsn, schema) // second handle: empty caches
				var rs []Release
				seq := []int32{3, 0, 3, 7, 1, 6, 2, 5, 4}
				for n := range 12 {
					idx := seq[:1+n%len(seq)]
					zs, excl := idx[:1+len(idx)/2], idx[len(idx)/2:]
					rs = append(rs,
						Release{User: "d" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, InflDict: d, InflIdx: slices.Clone(idx)},
						Release{User: "l" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, Influencers: d.labels(idx)},
						Release{User: "b" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, InflBlocks: blocks, InflIdx: zs, InflExcl: excl},
						Release{User: "c" + strconv.Itoa(n), Model: "m", K: 2, Cost: 0.1, Influencers: d.labels(blocks.expand(zs, excl))})
				}
				for i, st := range []Store{a, b, a, b} {
					part := rs[i*12 : i*12+12]
					res, err := st.ChargeBatch(ctx, part, Unlimited)
					if err != nil {
						t.Fatal(err)
					}
					for j, r := range res {
						if r.Err != nil || !r.Fresh {
							t.Fatalf("item %d: %+v", j, r)
						}
						if got, want := r.Release.InfluencerLabels(), part[j].InfluencerLabels(); !slices.Equal(got, want) {
							t.Fatalf("item %d: InfluencerLabels %q, want %q", j, got, want)
						}
					}
				}
				nonEmpty := false
				for n := range 12 {
					read := func(st Store, user string) []string {
						t.Helper()
						r, ok, err := st.Latest(ctx, user+strconv.Itoa(n), "m", 2, Crypto)
						if err != nil || !ok || r.InflIdx != nil {
							t.Fatalf("%s%d: %v %v %+v", user, n, ok, err, r)
						}
						return r.Influencers
					}
					if dl, ll := read(a, "d"), read(b, "l"); !slices.Equal(dl, ll) || len(dl) == 0 {
						t.Fatalf("release %d: dictionary form reads back as %q, labels as %q", n, dl, ll)
					}
					bl, cl := read(b, "b"), read(a, "c")
					if !slices.Equal(bl, cl) {
						t.Fatalf("release %d: block form reads back as %q, labels as %q", n, bl, cl)
					}
					nonEmpty = nonEmpty || len(bl) > 0 && len(bl) < len(labels)
				}
				if !nonEmpty {
					t.Fatal("no block-coded release names a proper subset of the labels: the checks prove little")
				}
				if schema == LatestSchema {
					var n int
					err := a.(*sqlStore).b.read(ctx, func(q querier) error {
						return q.queryRow(ctx, "SELECT COUNT(*) FROM releases WHERE infl_ids >= ? AND infl_ids < ?", []byte{0x80, 0, 2}, []byte{0x80, 0, 3}).Scan(&n)
					})
					if err != nil || n != 12 {
						t.Fatalf("%d releases stored block-coded (%v), want 12", n, err)
					}
					if rep, err := Verify(ctx, a); err != nil || !rep.OK() {
						t.Fatalf("verify: %v %+v", err, rep)
					}
				}
				// Every party's exposure counts the dictionary and label
				// releases alike, and the block and label ones alike: an
				// even number of 0.1s.
				exp, err := a.Exposure(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range exp {
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

// TestVerifyBlocks: Verify reports a block whose body no longer matches its
// digest, a block-coded release whose block is gone, and a block naming an
// id without a label (negative controls: the untouched store passes).
func TestVerifyBlocks(t *testing.T) {
	labels := []string{"p", "q", "r", "s"}
	d, err := NewDict(len(labels), func(i int32) string { return labels[i] })
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := NewBlocks(d, func(z int32) []int32 { return []int32{z, (z + 1) % 4} })
	if err != nil {
		t.Fatal(err)
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		for _, tc := range []struct {
			name, edit, want string
		}{
			{"consistent", "", ""},
			{"body changed", "UPDATE influence_blocks SET body = (SELECT body FROM influence_blocks WHERE id = (SELECT MAX(id) FROM influence_blocks)) WHERE id = (SELECT MIN(id) FROM influence_blocks)", "is not the SHA-256 of its body"},
			{"block deleted", "DELETE FROM influence_blocks WHERE id = (SELECT MIN(id) FROM influence_blocks)", "is not a valid row of influence_blocks"},
			{"label deleted", "DELETE FROM influencer_labels WHERE label = 'q'", "has no label in influencer_labels"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := ctxT(t)
				s := fx.open(t).(*sqlStore)
				for i, zs := range [][]int32{{0}, {1, 2}, {3, 0}} {
					r := Release{User: "u" + strconv.Itoa(i), Model: "m", K: 1, Cost: 0.5, InflBlocks: blocks, InflIdx: zs, InflExcl: []int32{1}}
					if _, _, err := s.Charge(ctx, r, Unlimited); err != nil {
						t.Fatal(err)
					}
				}
				if tc.edit != "" {
					tamper(t, s, tc.edit)
				}
				rep, err := Verify(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if tc.want == "" {
					if !rep.OK() {
						t.Fatalf("consistent store: %v", rep.Err())
					}
					return
				}
				if rep.OK() || !strings.Contains(rep.Err().Error(), tc.want) {
					t.Fatalf("problems %v do not mention %q", rep.Err(), tc.want)
				}
			})
		}
	})
}

// TestPrepareInfluence: PrepareInfluence records every distinct block once
// (again: nothing more; from a second handle: nothing more), releases
// charged afterwards record no block of their own and read back as their
// labels, and Verify passes.
func TestPrepareInfluence(t *testing.T) {
	labels := []string{"10", "9", "a", "b", "200", "3", "x y", "0"}
	_, blocks := testBlocks(t, labels)
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		a, b := openDSN(t, dsn).(*sqlStore), openDSN(t, dsn).(*sqlStore)
		count := func() (n int) {
			t.Helper()
			if err := a.b.read(ctx, func(q querier) error {
				return q.queryRow(ctx, "SELECT COUNT(*) FROM influence_blocks").Scan(&n)
			}); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, st := range []*sqlStore{a, a, b} {
			if err := st.PrepareInfluence(ctx, blocks); err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 8 { // seven blocks and the empty one
				t.Fatalf("%d blocks recorded, want 8", n)
			}
		}
		for i, st := range []*sqlStore{a, b} {
			for z := range int32(8) {
				user := "u" + strconv.Itoa(i) + "-" + strconv.Itoa(int(z))
				r := Release{User: user, Model: "m", K: 1, Cost: 0.5, InflBlocks: blocks, InflIdx: []int32{z, (z + 2) % 8}, InflExcl: []int32{(z + 1) % 8}}
				want := r.InfluencerLabels()
				if _, _, err := st.Charge(ctx, r, Unlimited); err != nil {
					t.Fatal(err)
				}
				got, _, err := st.Latest(ctx, user, "m", 1, Crypto)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Influencers, want) && len(got.Influencers)+len(want) > 0 {
					t.Fatalf("%s: read back %q, want %q", user, got.Influencers, want)
				}
			}
		}
		if n := count(); n != 8 {
			t.Fatalf("%d blocks after the charges, want 8", n)
		}
		if rep, err := Verify(ctx, a); err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", err, rep.Err())
		}
	})
}

// TestPrepareInfluenceLabelOrder: with Dict.InLabelOrder, PrepareInfluence
// records the same labels with the same ids as without it (ids in label
// order), also when the order given is wrong: reversed, missing indices,
// repeating one, out of range, or too short (these fall back to sorting;
// they are the negative controls of the order check). A store that knows
// some labels already records only the others.
func TestPrepareInfluenceLabelOrder(t *testing.T) {
	labels := []string{"10", "9", "a", "b", "200", "3", "x y", "0"}
	byLabel := []int32{7, 0, 4, 5, 1, 2, 3, 6} // "0" "10" "200" "3" "9" "a" "b" "x y"
	orders := map[string][]int32{
		"none":         nil,
		"label order":  byLabel,
		"reversed":     reversed(byLabel),
		"missing":      {7, 0, 4, 5, 1, 2, 3, 3},
		"out of range": {7, 0, 4, 5, 1, 2, 3, 9},
		"short":        {7, 0, 4},
	}
	rows := func(t *testing.T, s *sqlStore) (out []string) {
		t.Helper()
		ctx := ctxT(t)
		if err := s.b.read(ctx, func(q querier) error {
			rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels ORDER BY id")
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var id int64
				var l string
				if err := rs.Scan(&id, &l); err != nil {
					return err
				}
				out = append(out, strconv.FormatInt(id, 10)+"="+l)
			}
			return rs.Err()
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		for _, known := range []bool{false, true} {
			var want []string
			for _, name := range []string{"none", "label order", "reversed", "missing", "out of range", "short"} {
				ctx := ctxT(t)
				s := fx.open(t).(*sqlStore)
				if known { // "3" and "a" recorded before
					if err := s.b.write(ctx, func(q querier) error {
						_, err := insertLabels(ctx, q, []string{"3", "a"})
						return err
					}); err != nil {
						t.Fatal(err)
					}
				}
				d, blocks := testBlocks(t, labels)
				if o := orders[name]; o != nil {
					d.InLabelOrder(func() []int32 { return slices.Clone(o) })
				}
				if err := s.PrepareInfluence(ctx, blocks); err != nil {
					t.Fatal(err)
				}
				got := rows(t, s)
				if want == nil {
					want = got
					if len(want) != len(labels) {
						t.Fatalf("%d labels recorded, want %d: %v", len(want), len(labels), want)
					}
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("known %v, order %s: recorded %v, want %v", known, name, got, want)
				}
			}
		}
	})
}

func reversed(x []int32) []int32 {
	out := slices.Clone(x)
	slices.Reverse(out)
	return out
}

// testBlocks is the dictionary of eight labels and its blocks z, z+1 and
// z+3 (mod 8), block 7 empty.
func testBlocks(t *testing.T, labels []string) (*Dict, *Blocks) {
	t.Helper()
	d, err := NewDict(len(labels), func(i int32) string { return labels[i] })
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := NewBlocks(d, func(z int32) []int32 {
		if z == 7 {
			return nil
		}
		return []int32{z, (z + 1) % 8, (z + 3) % 8}
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, blocks
}

// TestInsertLabelsAndBlocks: insertLabels and insertBlocks return, in
// order, the id each label or digest has in the table, whether this call
// inserted it or an earlier transaction did (those come from the SELECT
// after the INSERT ... RETURNING), with repeated digests in wants.
func TestInsertLabelsAndBlocks(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t).(*sqlStore)
		all := []string{"", "0", "1", "10", "2", "a", "b\u00e9", "x y", "zz"}
		earlier := []string{"1", "a", "zz"}
		sum := func(body string) [sha256.Size]byte { return sha256.Sum256([]byte(body)) }
		var wantsEarlier, wantsAll []blockWant
		for _, body := range []string{"b2", "b5"} {
			wantsEarlier = append(wantsEarlier, blockWant{body: []byte(body), sum: sum(body)})
		}
		for i, body := range []string{"b1", "b2", "b3", "b2", "b4", "b5", "b1"} {
			wantsAll = append(wantsAll, blockWant{z: int32(i), body: []byte(body), sum: sum(body)})
		}
		if err := s.b.write(ctx, func(q querier) error {
			if _, err := insertLabels(ctx, q, earlier); err != nil {
				return err
			}
			return insertBlocks(ctx, q, wantsEarlier, func(blockWant, int64) {})
		}); err != nil {
			t.Fatal(err)
		}
		var ids []int64
		gotBlock := map[int32]int64{}
		if err := s.b.write(ctx, func(q querier) (err error) {
			if ids, err = insertLabels(ctx, q, all); err != nil {
				return err
			}
			return insertBlocks(ctx, q, wantsAll, func(w blockWant, id int64) { gotBlock[w.z] = id })
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.b.read(ctx, func(q querier) error {
			for i, w := range all {
				var id int64
				if err := q.queryRow(ctx, "SELECT id FROM influencer_labels WHERE label = ?", w).Scan(&id); err != nil {
					return err
				}
				if ids[i] != id {
					t.Errorf("label %q: insertLabels says id %d, the table %d", w, ids[i], id)
				}
			}
			for _, w := range wantsAll {
				var id int64
				if err := q.queryRow(ctx, "SELECT id FROM influence_blocks WHERE digest = ?", w.sum[:]).Scan(&id); err != nil {
					return err
				}
				if gotBlock[w.z] != id {
					t.Errorf("block %q (want %d): insertBlocks says id %d, the table %d", w.body, w.z, gotBlock[w.z], id)
				}
			}
			var n int
			if err := q.queryRow(ctx, "SELECT COUNT(*) FROM influence_blocks").Scan(&n); err != nil || n != 5 {
				t.Errorf("%d blocks recorded (%v), want 5", n, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDigestOrder: digestOrder lists the wants in full-digest order,
// digests sharing their 8-byte prefix included (the tie-break on the whole
// digest), repeated digests next to each other, and leaves wants as given.
func TestDigestOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		wants := make([]blockWant, n)
		for i := range wants {
			var sum [sha256.Size]byte
			// Few distinct bytes: equal prefixes and equal digests are common.
			for j := range sum {
				if j < 8 || rapid.Bool().Draw(t, "vary") {
					sum[j] = byte(rapid.IntRange(0, 1).Draw(t, "b"))
				}
			}
			wants[i] = blockWant{z: int32(i), sum: sum}
		}
		ord := digestOrder(wants)
		for i, w := range wants {
			if w.z != int32(i) {
				t.Fatal("wants reordered")
			}
		}
		if len(ord) != n {
			t.Fatalf("%d indexes for %d wants", len(ord), n)
		}
		seen := make([]bool, n)
		for j, k := range ord {
			if seen[k] {
				t.Fatalf("index %d twice", k)
			}
			seen[k] = true
			if j > 0 && strings.Compare(string(wants[ord[j-1]].sum[:]), string(wants[k].sum[:])) > 0 {
				t.Fatalf("position %d: digest %x after %x", j, wants[k].sum, wants[ord[j-1]].sum)
			}
		}
	})
}

// TestDictPendingLearnedMeanwhile: a charge transaction marks dictionary
// labels the cache does not know (collect), then assigns ids to the labels
// still unknown (labelIDs). A transaction of the same handle that commits
// in between puts some of them in the cache (after its commit, outside the
// write lock), so labelIDs skips them: resolve takes their ids from the
// cache instead of failing (concurrent fresh releases hit this).
func TestDictPendingLearnedMeanwhile(t *testing.T) {
	ctx := ctxT(t)
	s := openDSN(t, sqliteFixture.dsn(t)).(*sqlStore)
	labels := []string{"a", "b", "c"}
	d, err := NewDict(len(labels), func(i int32) string { return labels[i] })
	if err != nil {
		t.Fatal(err)
	}
	c := &s.labels
	pend := dictPending{}
	out := pend.collect(c, d, []int32{0, 1, 2}, nil)
	if len(out) != 3 {
		t.Fatalf("collect marked %q, want all three", out)
	}
	// Another transaction of this handle recorded "a" and "c" and has
	// just published their ids.
	var other []int64
	if err := s.b.write(ctx, func(q querier) (err error) {
		other, err = insertLabels(ctx, q, []string{"a", "c"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.learnPairs([]string{"a", "c"}, other)
	learned := map[string]int64{}
	if err := s.b.write(ctx, func(q querier) error {
		if err := labelIDs(ctx, q, c, [][]string{out}, learned); err != nil {
			return err
		}
		return pend.resolve(c, learned)
	}); err != nil {
		t.Fatal(err)
	}
	if len(learned) != 1 || learned["b"] == 0 {
		t.Fatalf("labelIDs assigned %v, want an id for b only", learned)
	}
	got := pend.idsOf(d)
	if got[0] != other[0] || got[2] != other[1] || got[1] != learned["b"] {
		t.Fatalf("resolved ids %v, want a=%d b=%d c=%d", got, other[0], learned["b"], other[1])
	}
}
