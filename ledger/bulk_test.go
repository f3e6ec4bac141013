package ledger

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestFreshIDs: freshIDs gives SQLite's empty tables the id after
// AUTOINCREMENT's sequence (1 when never used, past deleted ids
// otherwise), and 0 for a table with rows and for PostgreSQL (concurrent
// writers).
func TestFreshIDs(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t).(*sqlStore)
		sqlite := s.b.name() == "sqlite"
		fresh := func(table string) (first int64) {
			t.Helper()
			if err := s.b.write(ctx, func(q querier) (err error) {
				first, err = freshIDs(ctx, q, s.b, table)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return first
		}
		want := func(sqliteFirst int64) int64 {
			if sqlite {
				return sqliteFirst
			}
			return 0
		}
		for _, table := range []string{"influencer_labels", "influence_blocks"} {
			if got := fresh(table); got != want(1) {
				t.Fatalf("%s never used: first id %d, want %d", table, got, want(1))
			}
		}
		if err := s.b.write(ctx, func(q querier) error {
			_, err := insertLabels(ctx, q, []string{"a", "b", "c"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got := fresh("influencer_labels"); got != 0 {
			t.Fatalf("table with rows: first id %d, want 0", got)
		}
		if got := fresh("influence_blocks"); got != want(1) {
			t.Fatalf("other table: first id %d, want %d", got, want(1))
		}
		tamper(t, s, "DELETE FROM influencer_labels")
		if got := fresh("influencer_labels"); got != want(4) {
			t.Fatalf("emptied table: first id %d, want %d (ids are never reused)", got, want(4))
		}
	})
}

// TestBulkMatchesInsert is a differential test: into empty tables,
// insertFresh (labels) and recordBlocks with freshIDs's first id give the
// same rows and report the same ids as insertLabels and insertBlocks
// (INSERT ... RETURNING), repeated digests included; an insert after them
// continues the sequence.
func TestBulkMatchesInsert(t *testing.T) {
	ctx := ctxT(t)
	labels := []string{"", "\"q\"", "0", "1", "10", "2", "<a&b>", "\\", "a", "b\u00e9", "tab\there\nnl\x01", "x y", "zz", "\u2028\U0001F600"}
	var wants []blockWant
	for i, body := range []string{"b1", "b2", "b3", "b2", "b4", "b5", "b1"} {
		wants = append(wants, blockWant{z: int32(i), body: []byte(body), sum: sha256.Sum256([]byte(body))})
	}
	type result struct {
		labelIDs []int64
		blockIDs map[int32]int64
		rows     string
	}
	run := func(bulk bool) result {
		s := sqliteFixture.open(t).(*sqlStore)
		res := result{blockIDs: map[int32]int64{}}
		got := func(w blockWant, id int64) { res.blockIDs[w.z] = id }
		err := s.b.write(ctx, func(q querier) (err error) {
			if !bulk {
				if res.labelIDs, err = insertLabels(ctx, q, labels); err != nil {
					return err
				}
				return insertBlocks(ctx, q, wants, got)
			}
			first, err := freshIDs(ctx, q, s.b, "influencer_labels")
			if err != nil || first == 0 {
				return fmt.Errorf("labels: first id %d (%v)", first, err)
			}
			if res.labelIDs, err = insertFreshLabels(ctx, q, labels, first); err != nil {
				return err
			}
			if first, err = freshIDs(ctx, q, s.b, "influence_blocks"); err != nil || first == 0 {
				return fmt.Errorf("blocks: first id %d (%v)", first, err)
			}
			return recordBlocks(ctx, q, wants, first, got)
		})
		if err != nil {
			t.Fatal(err)
		}
		// One more label the ordinary way: it continues the sequence.
		if err := s.b.write(ctx, func(q querier) error {
			_, err := insertLabels(ctx, q, []string{"later"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := s.b.read(ctx, func(q querier) error {
			for _, sel := range []string{"SELECT id, label FROM influencer_labels ORDER BY id", "SELECT id, hex(digest) || ':' || hex(body) FROM influence_blocks ORDER BY id"} {
				rs, err := q.query(ctx, sel)
				if err != nil {
					return err
				}
				for rs.Next() {
					var id int64
					var v string
					if err := rs.Scan(&id, &v); err != nil {
						rs.Close()
						return err
					}
					fmt.Fprintf(&b, "%d=%q ", id, v)
				}
				rs.Close()
				b.WriteString("| ")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		res.rows = b.String()
		return res
	}
	ref, bulk := run(false), run(true)
	if !slices.Equal(ref.labelIDs, bulk.labelIDs) {
		t.Errorf("label ids %v, want %v", bulk.labelIDs, ref.labelIDs)
	}
	if fmt.Sprint(ref.blockIDs) != fmt.Sprint(bulk.blockIDs) || len(bulk.blockIDs) != len(wants) {
		t.Errorf("block ids %v, want %v", bulk.blockIDs, ref.blockIDs)
	}
	if ref.rows != bulk.rows {
		t.Errorf("rows\n%s\nwant\n%s", bulk.rows, ref.rows)
	}
	if !strings.Contains(bulk.rows, fmt.Sprintf("%d=%q", len(labels)+1, "later")) {
		t.Errorf("the label inserted after the bulk insert did not get id %d: %s", len(labels)+1, bulk.rows)
	}
}

// insertFresh refuses a row function that gives the wrong number of values
// (an internal error, not a short row).
func TestInsertFreshArity(t *testing.T) {
	ctx := context.Background()
	s := sqliteFixture.open(t).(*sqlStore)
	err := s.b.write(ctx, func(q querier) error {
		_, err := insertFresh(ctx, q, "influence_blocks", "id, digest, body", 2, 1, func(j int, args []any) []any { return append(args, []byte{1}) })
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "values for") {
		t.Fatalf("err %v, want the arity error", err)
	}
}

// TestInsertFreshLabelsChunks: insertFreshLabels over several statements
// (more than freshLabelsPer labels) gives label j the id first+j, and a
// batch with a label json_each cannot carry exactly (invalid UTF-8) takes
// the bound parameters instead, with the same result.
func TestInsertFreshLabelsChunks(t *testing.T) {
	ctx := ctxT(t)
	for _, bad := range []bool{false, true} {
		labels := make([]string, 2*freshLabelsPer+5)
		for j := range labels {
			labels[j] = fmt.Sprintf("n%06d", j)
		}
		if bad {
			labels[len(labels)-1] = "z\xff"
		}
		s := sqliteFixture.open(t).(*sqlStore)
		var ids []int64
		err := s.b.write(ctx, func(q querier) error {
			first, err := freshIDs(ctx, q, s.b, "influencer_labels")
			if err != nil || first == 0 {
				return fmt.Errorf("first id %d (%v)", first, err)
			}
			ids, err = insertFreshLabels(ctx, q, labels, first)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		var got []string
		if err := s.b.read(ctx, func(q querier) error {
			rs, err := q.query(ctx, "SELECT id, label FROM influencer_labels ORDER BY id")
			if err != nil {
				return err
			}
			return scanLabels(rs, func(id int64, w string) { gotIDs, got = append(gotIDs, id), append(got, w) })
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, labels) || !slices.Equal(gotIDs, ids) || ids[len(ids)-1] != ids[0]+int64(len(ids)-1) {
			t.Fatalf("bad label %v: %d rows, want %d labels with consecutive ids", bad, len(got), len(labels))
		}
	}
}
