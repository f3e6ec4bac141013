package ledger

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dplp/dplp/internal/jsonenc"
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

// freshLabelsPer is the number of labels in one statement of
// insertFreshLabels.
const freshLabelsPer = 8192

// insertFreshLabels is insertFresh for influencer_labels: the labels of a
// statement go as one JSON array, expanded by SQLite's json_each, instead
// of one bound parameter per label (the driver's binding of ten million
// parameters was a third of the labels' recording: 1.04 s against 1.55-1.60
// s per million labels, measured with the driver alone). json_each returns
// each JSON string's text exactly, for any label that is valid UTF-8
// without NUL (as every influencer label is); a batch with another falls
// back to insertFresh.
func insertFreshLabels(ctx context.Context, q querier, labels []string, first int64) ([]int64, error) {
	for _, w := range labels {
		if !utf8.ValidString(w) || strings.IndexByte(w, 0) >= 0 {
			return insertFresh(ctx, q, "influencer_labels", "id, label", len(labels), first, func(j int, args []any) []any {
				return append(args, labels[j])
			})
		}
	}
	var buf []byte
	for lo := 0; lo < len(labels); lo += freshLabelsPer {
		buf = jsonenc.AppendStrings(buf[:0], labels[lo:min(lo+freshLabelsPer, len(labels))])
		if err := q.exec(ctx, "INSERT OR FAIL INTO influencer_labels (id, label) SELECT ? + key, value FROM json_each(?)", first+int64(lo), string(buf)); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, len(labels))
	for j := range ids {
		ids[j] = first + int64(j)
	}
	return ids, nil
}
