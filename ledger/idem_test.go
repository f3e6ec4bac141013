package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFindIdem: a release is found by (user, key, provenance) only.
func TestFindIdem(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		f, ok := s.(IdemFinder)
		if !ok {
			t.Fatal("the SQL store does not implement IdemFinder")
		}
		r := testRelease("u1", "a", 0.5)
		r.IdemKey = "client:k1"
		stored, fresh, err := s.Charge(ctx, r, Unlimited)
		if err != nil || !fresh {
			t.Fatal(err)
		}
		for _, c := range []struct {
			user, key string
			prov      Provenance
			found     bool
		}{
			{"u1", "client:k1", Crypto, true},
			{"u1", "client:k2", Crypto, false},
			{"u2", "client:k1", Crypto, false},
			{"u1", "client:k1", Seeded, false},
			{"u1", "", Crypto, false},
		} {
			got, ok, err := f.FindIdem(ctx, c.user, c.key, c.prov)
			if err != nil || ok != c.found || (ok && got.ID != stored.ID) {
				t.Errorf("%+v: found %v (%v), id %d", c, ok, err, got.ID)
			}
		}
		if _, _, err := f.FindIdem(ctx, "u1", "client:k1", Provenance(9)); err == nil {
			t.Error("an unknown provenance was accepted")
		}
	})
}

// TestIdemIndexPartial: from schema 11 the unique index of idempotency keys
// holds only releases that have a key; it still makes keys unique per user
// and provenance, and the planner uses it for both lookups by key
// (idemLookupSQL, idemBatchSQL). Negative control: a query that does not
// say idem_key = ? cannot use it, which a full index would allow.
func TestIdemIndexPartial(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t).(*sqlStore)
		keyed := testRelease("u1", "a", 0.5)
		keyed.IdemKey = "client:k1"
		for _, r := range []Release{keyed, testRelease("u1", "b", 0.5), testRelease("u2", "c", 0.5)} {
			if _, _, err := s.Charge(ctx, r, Unlimited); err != nil {
				t.Fatal(err)
			}
		}
		applied(t, s)
		var def string
		defSQL := "SELECT sql FROM sqlite_master WHERE name = 'releases_idem_key'"
		if s.b.name() == "postgres" {
			defSQL = "SELECT indexdef FROM pg_indexes WHERE indexname = 'releases_idem_key'"
		}
		if err := s.b.read(ctx, func(q querier) error { return q.queryRow(ctx, defSQL).Scan(&def) }); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(def, "idem_key IS NOT NULL") || !strings.Contains(strings.ToUpper(def), "UNIQUE") {
			t.Fatalf("index definition %q: want a unique index WHERE idem_key IS NOT NULL", def)
		}
		// Uniqueness: a second row with the same (user, provenance, key)
		// is refused by the index itself.
		dup := fmt.Sprintf(`INSERT INTO releases (user_id, model, k, list, eps_p, cost, rho, seeded, idem_key, created, influencers)
			VALUES ('u1', 'test-model', 4, '[]', 0.125, 0.5, 0.125, 0, 'client:k1', '%s', '[]')`, fmtTime(time.Now()))
		if err := s.b.write(ctx, func(q querier) error { return q.exec(ctx, dup) }); err == nil {
			t.Fatal("a duplicate idempotency key was recorded")
		}
		v := s.schema
		lit := func(stmt string, args ...string) string {
			for _, a := range args {
				stmt = strings.Replace(stmt, "?", a, 1)
			}
			return stmt
		}
		for _, c := range []struct {
			name, stmt string
			uses       bool
		}{
			{"idemLookupSQL", lit(idemLookupSQL(v), "'u1'", "'client:k1'", "0"), true},
			{"idemBatchSQL", lit(idemBatchSQL(v, 3), "'client:k1'", "0", "'u1'", "'u2'", "'u3'"), true},
			{"no key condition", "SELECT id FROM releases WHERE user_id = 'u1' AND seeded = 0", false},
		} {
			plan := queryPlan(ctx, t, s, c.stmt)
			if got := strings.Contains(plan, "releases_idem_key"); got != c.uses {
				t.Errorf("%s: plan uses releases_idem_key = %v, want %v:\n%s", c.name, got, c.uses, plan)
			}
		}
	})
}

// queryPlan returns the planner's plan for stmt. On PostgreSQL it is taken
// with sequential scans disabled and the other index on user_id dropped
// (inside a transaction rolled back afterwards), so that a tiny table does
// not make a scan the cheaper plan: what is asked is whether an index can
// serve the query, not whether the planner prefers it on three rows.
func queryPlan(ctx context.Context, t *testing.T, s *sqlStore, stmt string) string {
	t.Helper()
	var lines []string
	collect := func(q querier, sql string) error {
		rs, err := q.query(ctx, sql)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var line string
			var err error
			if s.b.name() == "postgres" {
				err = rs.Scan(&line)
			} else {
				var id, parent, unused int64
				err = rs.Scan(&id, &parent, &unused, &line)
			}
			if err != nil {
				return err
			}
			lines = append(lines, line)
		}
		return rs.Err()
	}
	var err error
	if s.b.name() == "postgres" {
		done := errors.New("rolled back")
		err = s.b.write(ctx, func(q querier) error {
			for _, st := range []string{"SET LOCAL enable_seqscan = off", "DROP INDEX releases_latest_prov"} {
				if err := q.exec(ctx, st); err != nil {
					return err
				}
			}
			if err := collect(q, "EXPLAIN "+stmt); err != nil {
				return err
			}
			return done
		})
		if errors.Is(err, done) {
			err = nil
		}
	} else {
		err = s.b.read(ctx, func(q querier) error { return collect(q, "EXPLAIN QUERY PLAN "+stmt) })
	}
	if err != nil {
		t.Fatalf("plan of %s: %v", stmt, err)
	}
	return strings.Join(lines, "\n")
}
