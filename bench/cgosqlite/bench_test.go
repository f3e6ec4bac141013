package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dump is every row the ledger's charge path writes, as text: releases
// (all columns but created, which is the wall clock) in id order, spend
// rows, the release id sequence and the label table's size.
func dump(t *testing.T, file string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := openDB(ctx, Modernc, file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	q := func(query string) {
		rs, err := db.QueryContext(ctx, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				fmt.Fprintf(&b, "%s=%T:%v ", cols[i], v, v)
			}
			out = append(out, b.String())
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
	}
	q("SELECT " + strings.ReplaceAll(releaseCols, "created, ", "") + ", typeof(created), length(created) FROM releases ORDER BY id")
	q("SELECT * FROM spend ORDER BY user_id")
	q("SELECT name, seq FROM sqlite_sequence WHERE name = 'releases'")
	q("SELECT COUNT(*) FROM influencer_labels")
	q("SELECT COUNT(*) FROM exposure")
	return out
}

// TestSameBytes checks that the raw inserts write exactly the rows the real
// ledger writes for the same synthetic lists (so the comparison is of the
// same bytes), on both drivers, and, in the overlay build, that the real
// ledger on the cgo driver writes them too. It also runs the command's
// output path once. No timing is asserted.
func TestSameBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opt := Options{Users: 700, K: 7, Batch: 256, Seed: 3} // three transactions, the last one short
	want := dump(t, mustFill(t, ctx, filepath.Join(dir, "ref.db"), Modernc, PathLedger, opt))
	if len(want) < opt.Users*2 {
		t.Fatalf("reference ledger has %d rows", len(want))
	}
	cases := []kase{{PathRaw, Modernc}, {PathRaw, Mattn}, {PathSQL, Modernc}, {PathLean, Modernc}, {PathSQL, Mattn}, {PathLean, Mattn}}
	if overlayBuilt {
		cases = append(cases, kase{PathLedger, Mattn})
	} else {
		t.Log("not the overlay build: the ledger path on the cgo driver is not checked (go test -tags cgosqliteoverlay -overlay overlay.json)")
	}
	for _, c := range cases {
		got := dump(t, mustFill(t, ctx, filepath.Join(dir, c.String()+".db"), c.driver, c.path, opt))
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%s: row %d differs from the ledger's:\n got %s\nwant %s", c, i, got[i], want[i])
				}
			}
			t.Fatalf("%s: %d rows, the ledger wrote %d", c, len(got), len(want))
		}
	}
	var out bytes.Buffer
	if err := run(ctx, &out, Options{Users: 50, K: 3, Batch: 16, Seed: 1}, 1, dir, "", true); err != nil {
		t.Fatal(err)
	}
	var sum Summary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	if n := len(sum.Runs); n != 3 && n != 4 {
		t.Errorf("%d runs, want one per case", n)
	}
	keys := []string{"ledger/raw modernc", "raw modernc/mattn"}
	if overlayBuilt {
		keys = append(keys, "ledger/raw mattn", "ledger modernc/mattn")
	}
	for _, k := range keys {
		if !(sum.Ratios[k] > 0) {
			t.Errorf("ratio %q missing: %v", k, sum.Ratios)
		}
	}
}

func mustFill(t *testing.T, ctx context.Context, file, driver, path string, opt Options) string {
	t.Helper()
	r, err := Fill(ctx, file, driver, path, opt)
	if err != nil {
		t.Fatalf("%s-%s: %v", path, driver, err)
	}
	if r.Users != opt.Users || !(r.Seconds > 0) {
		t.Fatalf("%s-%s: %+v", path, driver, r)
	}
	return file
}
