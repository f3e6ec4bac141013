package ledger

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestRebind: PostgreSQL's rebind numbers placeholders as SQLite does: a
// numbered one keeps its number, a plain one takes one more than the
// largest so far (execRows' shared columns come first).
func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"INSERT INTO t (a, b) VALUES (?, ?), (?, ?)", "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"},
		{"VALUES (?1, ?2), (?3, ?1), (?12, ?2)", "VALUES ($1, $2), ($3, $1), ($12, $2)"},
		{"SELECT 'é' WHERE a = ?", "SELECT 'é' WHERE a = $1"},
		{"VALUES (?1, ?2, ?, ?), (?1, ?2, ?, ?)", "VALUES ($1, $2, $3, $4), ($1, $2, $5, $6)"},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// countingQ records the statements and arguments that reach the database.
type countingQ struct {
	querier
	stmts []string
	args  int
}

func (c *countingQ) exec(ctx context.Context, s string, args ...any) error {
	c.stmts = append(c.stmts, s)
	c.args += len(args)
	return c.querier.exec(ctx, s, args...)
}

// TestExecRowsShared: execRows binds a column once per statement when
// every row holds the same value, and the rows written are the ones a
// statement per row writes, on every store, for every mix of shared and
// per-row columns (floats bit for bit: -0 and 0 are not shared; NULLs;
// equal blobs, which are never shared; batches across statement chunks).
func TestExecRowsShared(t *testing.T) {
	type rowT struct {
		id   int64
		s    string
		k    int
		x    float64
		n    any // nil or a string
		blob []byte
	}
	const width = 6
	gen := func(n int, vary func(i int, r *rowT)) []rowT {
		rows := make([]rowT, n)
		for i := range rows {
			rows[i] = rowT{id: int64(i + 1), s: "model:x'y", k: 30, x: 0.25, blob: []byte{1, 2, 3}}
			if vary != nil {
				vary(i, &rows[i])
			}
		}
		return rows
	}
	cases := []struct {
		name   string
		rows   []rowT
		shared int // columns bound once per statement
	}{
		{"one row", gen(1, nil), 0},
		{"all but id and blob shared", gen(40, nil), 4},
		{"across chunks", gen(1300, nil), 4},
		{"nothing shared", gen(90, func(i int, r *rowT) {
			r.s, r.k, r.x, r.n = fmt.Sprint("m", i), i, float64(i)/3, fmt.Sprint(i)
		}), 0},
		{"signed zeros", gen(7, func(i int, r *rowT) {
			if i == 3 {
				r.x = math.Copysign(0, -1)
			} else {
				r.x = 0
			}
		}), 3},
		{"NULL shared, text differs once", gen(25, func(i int, r *rowT) {
			if i == 24 {
				r.s = "model:z"
			}
		}), 3},
		{"text shared, NULL once", gen(25, func(i int, r *rowT) {
			r.n = "p"
			if i == 0 {
				r.n = nil
			}
		}), 3},
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t).(*sqlStore)
		blobType := "BLOB"
		if s.b.name() == "postgres" {
			blobType = "BYTEA"
		}
		for ci, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				tabs := [2]string{fmt.Sprintf("er_shared_%d", ci), fmt.Sprintf("er_plain_%d", ci)}
				for _, tab := range tabs {
					tamper(t, s, "CREATE TABLE "+tab+" (id BIGINT PRIMARY KEY, s TEXT NOT NULL, k BIGINT NOT NULL, x DOUBLE PRECISION NOT NULL, n TEXT, b "+blobType+" NOT NULL)")
				}
				row := func(i int, args []any) []any {
					r := c.rows[i]
					return append(args, r.id, r.s, r.k, r.x, r.n, r.blob)
				}
				cq := &countingQ{}
				err := s.b.write(ctx, func(q querier) error {
					cq.querier, cq.stmts, cq.args = q, nil, 0
					if err := execRows(ctx, cq, len(c.rows), "INSERT INTO "+tabs[0], []string{"id", "s", "k", "x", "n", "b"}, "", row); err != nil {
						return err
					}
					for i := range c.rows { // the reference: one statement, every value bound
						if err := q.exec(ctx, "INSERT INTO "+tabs[1]+" (id, s, k, x, n, b) VALUES (?, ?, ?, ?, ?, ?)", row(i, nil)...); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				// The shared columns are bound once per statement.
				per := len(c.rows)*(width-c.shared) + len(cq.stmts)*c.shared
				if cq.args != per {
					t.Errorf("%d values bound in %d statements, want %d (%d shared columns)", cq.args, len(cq.stmts), per, c.shared)
				}
				for _, st := range cq.stmts {
					if (c.shared > 0) != strings.Contains(st, "?1") {
						t.Errorf("statement %.120q... does not number its shared columns as it should", st)
					}
				}
				got, want := readER(t, s, tabs[0]), readER(t, s, tabs[1])
				if len(got) != len(c.rows) || len(want) != len(c.rows) {
					t.Fatalf("%d and %d rows, want %d", len(got), len(want), len(c.rows))
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.id != w.id || g.s != w.s || g.k != w.k || math.Float64bits(g.x) != math.Float64bits(w.x) || g.n != w.n || !bytes.Equal(g.b, w.b) {
						t.Fatalf("row %d: %+v, a statement per row wrote %+v", i, g, w)
					}
				}
			})
		}
	})
}

type erRow struct {
	id, k int64
	s     string
	x     float64
	n     string // "<nil>" for NULL
	b     []byte
}

func readER(t *testing.T, s *sqlStore, table string) []erRow {
	t.Helper()
	var out []erRow
	err := s.b.read(ctxT(t), func(q querier) error {
		rs, err := q.query(ctxT(t), "SELECT id, s, k, x, COALESCE(n, '<nil>'), b FROM "+table+" ORDER BY id")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r erRow
			if err := rs.Scan(&r.id, &r.s, &r.k, &r.x, &r.n, &r.b); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
