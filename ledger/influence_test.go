package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// randomLabels returns a random set of labels: decimal, unicode, with
// escapes, and sometimes "*".
func randomLabels(rng *rand.Rand) []string {
	n := rng.IntN(40)
	var out []string
	for range n {
		switch rng.IntN(5) {
		case 0:
			out = append(out, fmt.Sprint(rng.IntN(1000)))
		case 1:
			out = append(out, fmt.Sprintf("ünïcödé-%d-日本", rng.IntN(50)))
		case 2:
			out = append(out, fmt.Sprintf("q\"uote\\%d\n", rng.IntN(20)))
		case 3:
			out = append(out, "*")
		default:
			out = append(out, fmt.Sprintf("p%d 🙂", rng.Uint64()))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The encoding round-trips: ids through appendInflSet/decodeInflSet, and
// label sets (with "*" and unicode) through the label cache.
func TestInflSetRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 2000; it++ {
		var ids []int64
		next := int64(0)
		for range rng.IntN(50) {
			switch rng.IntN(3) {
			case 0:
				next += 1
			case 1:
				next += 1 + rng.Int64N(200)
			default:
				next += 1 + rng.Int64N(1<<40)
			}
			ids = append(ids, next)
		}
		star := rng.IntN(2) == 0
		for _, ef := range []bool{false, true} {
			b := appendInflSet(nil, ids, star, ef)
			if len(b) == 0 {
				t.Fatal("empty encoding")
			}
			got, gotStar, err := decodeInflSet(b)
			if err != nil || gotStar != star || !slices.Equal(got, ids) {
				t.Fatalf("ef %v ids %v star %v: got %v %v %v", ef, ids, star, got, gotStar, err)
			}
			// Truncations and extensions are errors, never other sets.
			if len(b) > 1 {
				if _, _, err := decodeInflSet(b[:len(b)-1]); err == nil {
					t.Fatalf("%x truncated decodes", b)
				}
			}
			if _, _, err := decodeInflSet(append(slices.Clone(b), 1)); err == nil {
				t.Fatalf("%x extended decodes", b)
			}
		}
	}
	if _, _, err := decodeInflSet(nil); err == nil {
		t.Fatal("empty blob decodes")
	}
	if _, _, err := decodeInflSet([]byte{4, 1, 0}); err == nil { // delta 0: not increasing
		t.Fatal("repeated id decodes")
	}

	var c labelCache
	assigned := map[string]int64{}
	lastID := int64(0)
	for it := 0; it < 2000; it++ {
		labels := randomLabels(rng)
		for _, w := range labels {
			if _, ok := assigned[w]; !ok && w != "*" {
				lastID += 1 + rng.Int64N(3)*1000 // unique ids, with gaps
				assigned[w] = lastID
			}
		}
		learned := map[string]int64{}
		for _, w := range labels {
			if id, ok := assigned[w]; ok {
				learned[w] = id
			}
		}
		b := encodeInfl(&c, labels, learned, it%2 == 0, nil)
		if b == nil {
			t.Fatalf("labels %q: not encoded", labels)
		}
		c.learn(learned)
		ids, star, err := decodeInflSet(b)
		if err != nil {
			t.Fatal(err)
		}
		got := inflLabels(&c, ids, star)
		if !slices.Equal(got, labels) && !(len(got) == 0 && len(labels) == 0) {
			t.Fatalf("labels %q: got %q", labels, got)
		}
	}
}

// Influencer sets come back from the store as charged (normalized), on
// every read path, and Exposure sums them.
func TestInfluencersStored(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		s := openDSN(t, dsn)
		rng := rand.New(rand.NewPCG(3, 4))
		want := map[string][]string{}
		expo := map[string]float64{}
		var batch []Release
		for i := range 60 {
			r := testRelease(fmt.Sprintf("u%d", i), "x", 0.5)
			r.IdemKey = "k"
			r.Influencers = randomLabels(rng)
			norm, err := normInfluencers(r.User, r.Influencers)
			if err != nil {
				t.Fatal(err)
			}
			want[r.User] = norm
			for _, w := range norm {
				expo[w] += r.Cost
			}
			batch = append(batch, r)
		}
		res, err := s.(BudgetStore).ChargeBatch(ctx, batch, Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil || !r.Fresh {
				t.Fatal(r.Err)
			}
		}
		check := func(where string, s Store, got Release) {
			t.Helper()
			w := want[got.User]
			if len(w) == 0 {
				w = []string{}
			}
			if !reflect.DeepEqual(got.Influencers, w) || got.inflIDs != nil {
				t.Errorf("%s %s: influencers %q, want %q", where, got.User, got.Influencers, w)
			}
		}
		// A fresh process (empty cache) and the writer (cache filled).
		for _, st := range []Store{openDSN(t, dsn), s} {
			for u := range want {
				rel, ok, err := st.(IdemFinder).FindIdem(ctx, u, "k", Crypto)
				if err != nil || !ok {
					t.Fatal(ok, err)
				}
				check("FindIdem", st, rel)
				rel, ok, err = st.Latest(ctx, u, "test-model", 4, Crypto)
				if err != nil || !ok {
					t.Fatal(ok, err)
				}
				check("Latest", st, rel)
			}
			users := make([]string, 0, len(want))
			for u := range want {
				users = append(users, u)
			}
			m, err := st.LatestBatch(ctx, users, "test-model", 4, Crypto)
			if err != nil {
				t.Fatal(err)
			}
			for _, rel := range m {
				check("LatestBatch", st, rel)
			}
			// Re-serving by key returns the stored set.
			again, err := st.(BudgetStore).ChargeBatch(ctx, batch, Unlimited)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range again {
				if r.Err != nil || r.Fresh {
					t.Fatal(r.Err, r.Fresh)
				}
				check("re-serve", st, r.Release)
			}
		}
		got, err := openDSN(t, dsn).Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		star := expo["*"]
		if len(got) != len(expo) {
			t.Errorf("%d exposure rows, want %d", len(got), len(expo))
		}
		for _, e := range got {
			w := expo[e.Party]
			if e.Party != "*" {
				w += star
			}
			if !near(e.Eps, w) {
				t.Errorf("exposure of %q: %v, want %v", e.Party, e.Eps, w)
			}
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", rep.Err(), err)
		}
	})
}

// A schema-7 store's releases (their influencers JSON arrays, folded or
// not) read and fold after migration 8 exactly as a store that recorded
// the same releases at schema 8.
func TestLabelMigration(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn, ref := fx.dsn(t), fx.dsn(t)
		old, err := openAt(ctx, dsn, partySchema, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		newRef := openDSN(t, ref)
		charge := func(r Release, stores ...interface {
			Charge(context.Context, Release, Cap) (Release, bool, error)
		}) Release {
			t.Helper()
			var got Release
			for _, s := range stores {
				rel, _, err := s.Charge(ctx, r, Unlimited)
				if err != nil {
					t.Fatal(err)
				}
				got = rel
			}
			return got
		}
		mk := func(user, tag string, cost float64, infl ...string) Release {
			r := testRelease(user, tag, cost)
			r.Influencers = infl
			r.IdemKey = tag
			return r
		}
		charge(mk("u", "1", 1, "w1", "ünï \"q\"", "日本"), old, newRef)
		charge(mk("v", "2", 0.25, "*"), old, newRef)
		if _, err := old.Exposure(ctx, 0); err != nil { // folds 1 and 2
			t.Fatal(err)
		}
		if _, err := newRef.Exposure(ctx, 0); err != nil {
			t.Fatal(err)
		}
		charge(mk("u", "3", 0.5, "w1", "w2"), old, newRef) // unfolded at migration
		charge(mk("w", "4", 0.75), old, newRef)
		old.Close()

		s := openDSN(t, dsn)
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema || v < labelSchema {
			t.Fatalf("schema %d %v", v, err)
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify after migration: %v %v", rep.Err(), err)
		}
		charge(mk("u", "5", 0.125, "w2", "ünï \"q\"", "x"), s, newRef)
		for _, tc := range []struct {
			user, key string
			want      []string
		}{
			{"u", "1", []string{"w1", "ünï \"q\"", "日本"}},
			{"v", "2", []string{"*"}},
			{"u", "3", []string{"w1", "w2"}},
			{"w", "4", []string{}},
			{"u", "5", []string{"w2", "x", "ünï \"q\""}},
		} {
			want := slices.Clone(tc.want)
			slices.Sort(want)
			for name, st := range map[string]Store{"migrated": s, "reference": newRef} {
				rel, ok, err := st.(IdemFinder).FindIdem(ctx, tc.user, tc.key, Crypto)
				if err != nil || !ok || !reflect.DeepEqual(rel.Influencers, want) {
					t.Errorf("%s: release %s of %s: influencers %q %v %v, want %q", name, tc.key, tc.user, rel.Influencers, ok, err, want)
				}
			}
		}
		got, err := s.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantExpo, err := newRef.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantExpo) {
			t.Errorf("exposure after migration %+v, want %+v", got, wantExpo)
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", rep.Err(), err)
		}
	})
}

// Verify checks the encoded influencer sets.
func TestVerifyLabels(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		for _, tc := range []struct {
			edit, want string
		}{
			{"UPDATE releases SET infl_ids = ? WHERE user_id = 'u'", "stored influencer set"},
			{"UPDATE releases SET infl_ids = ? WHERE user_id = 'u' AND infl_ids IS NOT NULL", "upper bits overrun"},
			{"UPDATE releases SET infl_ids = ? WHERE user_id = 'u' AND infl_ids IS NOT NULL", "id 1099511627776 has no label"},
			{"DELETE FROM influencer_labels WHERE label = 'w2'", "has no label"},
			{"UPDATE influencer_labels SET label = '*' WHERE label = 'w2'", "want a party label"},
		} {
			t.Run(tc.want, func(t *testing.T) {
				s := fx.open(t).(*sqlStore)
				if _, _, err := s.Charge(ctx, testRelease("u", "1", 1), Unlimited); err != nil {
					t.Fatal(err)
				}
				if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
					t.Fatalf("clean store: %v %v", rep.Err(), err)
				}
				var args []any
				switch {
				case tc.want == "upper bits overrun":
					// Elias-Fano, one id (largest 1, l 0) whose upper
					// vector has no one bit.
					args = append(args, []byte{0x80, 0x00, 0x01, 0x02, 0x01, 0x00, 0x00})
				case strings.HasPrefix(tc.want, "id "):
					// A well-formed Elias-Fano set naming an id no
					// label has.
					args = append(args, appendInflSet(nil, []int64{1 << 40}, false, true))
				case strings.Contains(tc.edit, "?"):
					args = append(args, []byte{4, 1}) // two ids, one present
				}
				if err := s.b.write(ctx, func(q querier) error { return q.exec(ctx, tc.edit, args...) }); err != nil {
					t.Fatal(err)
				}
				rep, err := Verify(ctx, s)
				if err != nil || rep.OK() || !strings.Contains(rep.Err().Error(), tc.want) {
					t.Fatalf("%s: %v %v", tc.edit, rep.Err(), err)
				}
			})
		}
	})
}

// A schema-8 store's sets (uvarint format) read, re-serve, fold and verify
// after migration 9 exactly as sets the migrated store records Elias-Fano
// coded, and a store at schema 8 keeps writing the schema-8 format (which
// the dplp versions that know only version 8 read).
func TestEFMigration(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn, ref := fx.dsn(t), fx.dsn(t)
		old, err := openAt(ctx, dsn, labelSchema, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		newRef := openDSN(t, ref)
		rng := rand.New(rand.NewPCG(7, 8))
		var rels []Release
		for i := range 40 {
			r := testRelease(fmt.Sprintf("u%d", i%7), fmt.Sprint(i), 0.25)
			r.IdemKey = fmt.Sprint(i)
			r.Influencers = randomLabels(rng)
			if i >= 30 || i%2 == 0 { // large sets (written Elias-Fano coded at schema 9)
				r.Influencers = slices.DeleteFunc(r.Influencers, func(w string) bool { return w == "*" })
				for range 200 + rng.IntN(300) {
					r.Influencers = append(r.Influencers, fmt.Sprint(rng.IntN(1000000)))
				}
			}
			norm, err := normInfluencers(r.User, r.Influencers)
			if err != nil {
				t.Fatal(err)
			}
			r.Influencers = norm
			rels = append(rels, r)
		}
		chargeAll := func(s Store, rs []Release) {
			t.Helper()
			res, err := s.(BudgetStore).ChargeBatch(ctx, rs, Unlimited)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil || !r.Fresh {
					t.Fatal(r.Err, r.Fresh)
				}
			}
		}
		// written checks that the stored sets, in release order, are
		// those a store at schema 8 (the first n8) or 9 (the rest) writes,
		// and returns how many are Elias-Fano coded.
		written := func(s Store, n8 int) (ef int) {
			t.Helper()
			b := s.(*sqlStore).b
			var blobs [][]byte
			err := b.read(ctx, func(q querier) error {
				rs, err := q.query(ctx, "SELECT infl_ids FROM releases WHERE infl_ids IS NOT NULL ORDER BY id")
				if err != nil {
					return err
				}
				defer rs.Close()
				for rs.Next() {
					var blob []byte
					if err := rs.Scan(&blob); err != nil {
						return err
					}
					blobs = append(blobs, slices.Clone(blob))
				}
				return rs.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, blob := range blobs {
				ids, star, err := decodeInflSet(blob)
				if err != nil {
					t.Fatal(err)
				}
				if want := appendInflSet(nil, ids, star, i >= n8); !slices.Equal(blob, want) {
					t.Fatalf("set %d of %d (%d at schema 8): %x, want %x", i, len(blobs), n8, blob, want)
				}
				if len(blob) >= 3 && blob[0] == 0x80 && blob[1] == 0 && blob[2] == inflFormatEF {
					ef++
				}
			}
			return ef
		}
		chargeAll(old, rels[:20])
		chargeAll(newRef, rels[:20])
		if _, err := old.Exposure(ctx, 0); err != nil { // folds half of them
			t.Fatal(err)
		}
		if _, err := newRef.Exposure(ctx, 0); err != nil {
			t.Fatal(err)
		}
		chargeAll(old, rels[20:30]) // unfolded at migration
		chargeAll(newRef, rels[20:30])
		written(old, 30)
		old.Close()

		s := openDSN(t, dsn)
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema || v < efSchema {
			t.Fatalf("schema %d %v", v, err)
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify after migration: %v %v", rep.Err(), err)
		}
		chargeAll(s, rels[30:])
		chargeAll(newRef, rels[30:])
		// Small sets stay in the shorter schema-8 format.
		if ef := written(s, 30); ef != 10 {
			t.Fatalf("migrated store: %d Elias-Fano sets, want the 10 large ones recorded at schema 9", ef)
		}
		for _, st := range []Store{s, openDSN(t, dsn)} { // warm and cold label caches
			for _, r := range rels {
				for name, from := range map[string]Store{"migrated": st, "reference": newRef} {
					rel, ok, err := from.(IdemFinder).FindIdem(ctx, r.User, r.IdemKey, Crypto)
					want := r.Influencers
					if len(want) == 0 {
						want = []string{}
					}
					if err != nil || !ok || !reflect.DeepEqual(rel.Influencers, want) {
						t.Fatalf("%s: release %s of %s: influencers %q %v %v, want %q", name, r.IdemKey, r.User, rel.Influencers, ok, err, want)
					}
				}
			}
		}
		// Re-serving by key returns the stored sets of both formats.
		again, err := s.(BudgetStore).ChargeBatch(ctx, rels, Unlimited)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range again {
			if r.Err != nil || r.Fresh || !slices.Equal(r.Release.Influencers, rels[i].Influencers) {
				t.Fatalf("re-serve %d: %v %v %q", i, r.Err, r.Fresh, r.Release.Influencers)
			}
		}
		got, err := s.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := newRef.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("exposure after migration differs from the reference (%d rows, want %d)", len(got), len(want))
		}
		if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", rep.Err(), err)
		}
	})
}

// TestLabelCacheByID: every learned (label, id) reads back both ways,
// whichever store holds it: decimal labels with small ids (the dense
// array), decimal labels with ids beyond idDenseLimit or numbers beyond
// denseFoldLimit, non-canonical decimals ("007") and other labels (the
// maps); ids never learned are unknown.
func TestLabelCacheByID(t *testing.T) {
	var c labelCache
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[int64]string{}
	var labels []string
	var ids []int64
	add := func(w string, id int64) {
		if _, dup := want[id]; dup {
			return
		}
		for _, l := range labels {
			if l == w {
				return
			}
		}
		want[id] = w
		labels, ids = append(labels, w), append(ids, id)
	}
	for i := range 3000 {
		id := int64(1 + rng.IntN(1<<20))
		switch i % 6 {
		case 0, 1:
			add(fmt.Sprint(rng.IntN(1<<20)), id)
		case 2:
			add(fmt.Sprint(rng.IntN(1<<20)), idDenseLimit+id) // id beyond the dense array
		case 3:
			add(fmt.Sprint(denseFoldLimit+rng.IntN(1000)), id) // number beyond the dense fold
		case 4:
			add(fmt.Sprintf("00%d", rng.IntN(1000)), id) // not canonical
		default:
			add(fmt.Sprintf("user-%d", rng.Uint64()), id)
		}
	}
	c.learnPairs(labels[:len(labels)/2], ids[:len(ids)/2])
	c.learnPairs(labels[len(labels)/2:], ids[len(ids)/2:])
	for id, w := range want {
		if got, ok := c.label(id); !ok || got != w {
			t.Fatalf("label(%d) = %q, %v; want %q", id, got, ok, w)
		}
		c.mu.RLock()
		got, ok := c.lookup(w)
		knows := c.knows(id)
		c.mu.RUnlock()
		if !ok || got != id || !knows {
			t.Fatalf("lookup(%q) = %d, %v, knows(%d) %v; want %d", w, got, ok, id, knows, id)
		}
	}
	if len(c.decByID) == 0 || len(c.byID) == 0 {
		t.Fatalf("dense ids %d, mapped ids %d: both stores should be in use", len(c.decByID), len(c.byID))
	}
	for _, id := range []int64{0, -1, idDenseLimit - 1, 1 << 40} {
		if _, known := want[id]; known {
			continue
		}
		if w, ok := c.label(id); ok {
			t.Fatalf("label(%d) = %q for an id never learned", id, w)
		}
	}
	for id := int64(1); id < 2000; id++ {
		if _, known := want[id]; !known {
			if w, ok := c.label(id); ok {
				t.Fatalf("label(%d) = %q for an id never learned", id, w)
			}
		}
	}
}
