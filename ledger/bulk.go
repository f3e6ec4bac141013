package ledger

import (
	"context"
	"fmt"
	"strings"
)

// Bulk recording into empty tables. The first batch release into a new
// ledger records every influencer label and influence block at once
// (PrepareInfluence): a million rows of each at 1 M users. Inserting them
// with ON CONFLICT DO NOTHING RETURNING id made SQLite buffer every row
// for RETURNING and the driver scan each back (a fifth of the blocks'
// recording). When the transaction is the only writer and the table holds
// no row, no row can conflict, so the ids are assigned here instead.

// freshIDs returns, inside a write transaction q of b, the first id to
// give the rows of table when they may be inserted with ids first,
// first+1, ... and without a conflict check: b serialises its writers
// (SQLite's write lock; not PostgreSQL, whose concurrent transactions may
// insert the same keys) and table holds no row. The ids continue
// AUTOINCREMENT's sequence, so an id deleted once is never reused. It
// returns 0 otherwise.
func freshIDs(ctx context.Context, q querier, b backend, table string) (int64, error) {
	if b.name() != "sqlite" {
		return 0, nil
	}
	var first int64
	err := q.queryRow(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM `+table+`) THEN 0
		ELSE COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0) + 1 END`, table).Scan(&first)
	return first, err
}

// insertFresh inserts n rows into (SQLite) table with the ids first,
// first+1, ... (freshIDs's) and returns those ids, row j's first: cols
// names the id column first, row appends row j's other values, one per
// further column. A conflict fails the statement (and the transaction).
func insertFresh(ctx context.Context, q querier, table, cols string, n int, first int64, row func(j int, args []any) []any) ([]int64, error) {
	ncol := strings.Count(cols, ",") + 1
	per := max(1, 2*labelChunk/ncol) // about 1,000 values per statement, as the other inserts
	ph := "(?" + strings.Repeat(", ?", ncol-1) + ")"
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		args := make([]any, 0, (hi-lo)*ncol)
		for j := lo; j < hi; j++ {
			args = append(args, first+int64(j))
			args = row(j, args)
		}
		if len(args) != (hi-lo)*ncol {
			return nil, fmt.Errorf("ledger: bulk insert into %s: %d values for %d rows of %d columns", table, len(args), hi-lo, ncol)
		}
		if err := q.exec(ctx, "INSERT OR FAIL INTO "+table+" ("+cols+") VALUES "+ph+strings.Repeat(", "+ph, hi-lo-1), args...); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, n)
	for j := range ids {
		ids[j] = first + int64(j)
	}
	return ids, nil
}
