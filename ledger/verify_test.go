package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// tamper runs a hand edit on the store, bypassing the CHECK constraints
// (SQLite: ignore_check_constraints; PostgreSQL: the constraint dropped).
func tamper(t *testing.T, s *sqlStore, stmt string) {
	t.Helper()
	ctx := context.Background()
	err := s.b.write(ctx, func(q querier) error {
		if s.b.name() == "sqlite" {
			if err := q.exec(ctx, "PRAGMA ignore_check_constraints = ON"); err != nil {
				return err
			}
		} else if err := q.exec(ctx, "ALTER TABLE spend DROP CONSTRAINT IF EXISTS spend_nonneg"); err != nil {
			return err
		}
		return q.exec(ctx, stmt)
	})
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func TestVerify(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		for _, tc := range []struct {
			name  string
			edit  string
			wants []string // substrings of the problems; none: OK
		}{
			{"consistent", "", nil},
			{"negative spend", "UPDATE spend SET spent = -100 WHERE user_id = 'u1'",
				[]string{`spend row of user "u1": spent -100 (want finite, >= 0)`, `spend row of user "u1": spent -100, but the user's releases cost 1 in total`}},
			{"spend above its releases", "UPDATE spend SET spent = spent + 1, rho = rho * 2 WHERE user_id = 'u2'",
				[]string{`spend row of user "u2": spent 1.5, but the user's releases cost 0.5`, `spend row of user "u2": rho`}},
			{"release count", "UPDATE spend SET releases = 7 WHERE user_id = 'u1'",
				[]string{`spend row of user "u1": releases 7, but 2 releases are recorded`}},
			{"seeded over releases", "UPDATE spend SET seeded = 3 WHERE user_id = 'u2'",
				[]string{"want 0 <= seeded <= releases", "seeded 3, but 0 seeded releases"}},
			{"release cost over k x eps_p", "UPDATE releases SET cost = 100 WHERE id = (SELECT MIN(id) FROM releases)",
				[]string{"cost 100 exceeds k x eps_p = 4 x 0.125 = 0.5", "but the user's releases cost 100.5"}},
			{"release without spend", "DELETE FROM spend WHERE user_id = 'u2'",
				[]string{`user "u2": 1 releases (cost 0.5) but no spend row`}},
			{"list longer than k", `UPDATE releases SET list = '["a","b","c","d","e"]' WHERE user_id = 'u2'`,
				[]string{"list of 5 labels is longer than k=4"}},
			{"negative exposure", "UPDATE exposure SET eps = -1 WHERE party = 'w1'",
				[]string{`exposure row of party "w1": eps -1`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := ctxT(t)
				dsn := fx.dsn(t)
				s := openDSN(t, dsn).(*sqlStore)
				for i, u := range []string{"u1", "u2", "u1"} {
					if _, _, err := s.Charge(ctx, testRelease(u, string(rune('a'+i)), 0.5), Unlimited); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Exposure(ctx, 0); err != nil {
					t.Fatal(err)
				}
				if tc.edit != "" {
					if strings.Contains(tc.edit, "exposure") && fx.name == "postgres" {
						tamper(t, s, "ALTER TABLE exposure DROP CONSTRAINT IF EXISTS exposure_nonneg")
					}
					tamper(t, s, tc.edit)
				}
				ro, err := OpenWith(ctx, dsn, OpenOptions{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer ro.Close()
				rep, err := Verify(ctx, ro)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Schema != LatestSchema || rep.Releases != 3 {
					t.Fatalf("report %+v", rep)
				}
				if len(tc.wants) == 0 {
					if !rep.OK() || rep.Err() != nil {
						t.Fatalf("consistent store: %v", rep.Err())
					}
					return
				}
				msg := rep.Err()
				if msg == nil {
					t.Fatalf("%s: no problem found", tc.edit)
				}
				if !errors.Is(msg, errVerify) {
					t.Fatalf("error %v does not wrap errVerify", msg)
				}
				for _, w := range tc.wants {
					if !strings.Contains(msg.Error(), w) {
						t.Errorf("problems do not mention %q:\n%v", w, msg)
					}
				}
			})
		}
	})
}

// The CHECK constraints refuse a hand-edited negative spend; a store whose
// rows already violate them is not migrated (it stays at version 4).
func TestCheckConstraints(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t).(*sqlStore)
		if _, _, err := s.Charge(ctx, testRelease("u", "a", 0.5), Unlimited); err != nil {
			t.Fatal(err)
		}
		applied(t, s)
		for _, edit := range []string{
			"UPDATE spend SET spent = -100",
			"UPDATE spend SET rho = -1",
			"UPDATE spend SET seeded = 5",
			"INSERT INTO exposure (party, eps, rho) VALUES ('z', -1, 0)",
		} {
			err := s.b.write(ctx, func(q querier) error { return q.exec(ctx, edit) })
			if err == nil {
				t.Errorf("%s: accepted", edit)
			}
		}

		dsn := fx.dsn(t)
		old, err := openAt(ctx, dsn, 4, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := old.b.write(ctx, func(q querier) error {
			return q.exec(ctx, "INSERT INTO spend (user_id, spent, rho, releases, seeded) VALUES ('bad', -100, 0, 0, 0)")
		}); err != nil {
			t.Fatal(err)
		}
		old.Close()
		_, err = Open(ctx, dsn)
		if err == nil || !strings.Contains(err.Error(), "migration 5") || !strings.Contains(err.Error(), "left at version 4") {
			t.Fatalf("migrating a store with a negative spend: %v", err)
		}
	})
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sqlite:/var/lib/dplp/ledger.db", "sqlite:/var/lib/dplp/ledger.db"},
		{"postgres://u:hunter2@h/db", "postgres://u:***@h/db"},
		{"postgres://u:hun@ter2@h:5432/db?sslmode=disable", "postgres://u:***@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db?password=hunter2", "postgres://u@h/db?password=***"},
		{"postgres://u@h/db?sslmode=verify-full&sslpassword=hunter2&sslkey=/k/key.pem&application_name=x", "postgres://u@h/db?sslmode=verify-full&sslpassword=***&sslkey=***&application_name=x"},
		{"postgresql://u@h/db?PASSWORD=hunter2#frag", "postgresql://u@h/db?PASSWORD=***#frag"},
		{"host=h user=u password=hunter2 dbname=d", "host=h user=u password=*** dbname=d"},
		{"host=h password='hun ter2' dbname=d", "host=h password=*** dbname=d"},
		{`unknown store "mysql://root:hunter2@h/db"; use sqlite:PATH or postgres://user@host/db`, `unknown store "mysql://root:***@h/db"; use sqlite:PATH or postgres://user@host/db`},
		{"sqlite:x.db?password=hunter2", "sqlite:x.db?password=***"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(tc.want, "***") && strings.Contains(Redact(tc.in), "hunter2") {
			t.Errorf("Redact(%q) kept the secret", tc.in)
		}
	}
}

// No error of OpenWith contains a secret of the store name.
func TestOpenErrorsHideSecrets(t *testing.T) {
	ctx := ctxT(t)
	for _, dsn := range []string{
		"postgres://u:s3cr3tpw@127.0.0.1:1/db?connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?password=s3cr3tpw&connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?sslpassword=s3cr3tpw&sslmode=disable&connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?password=s3cr3tpw&sslmode=bogus",
		"postgres://u:s3cr3tpw@127.0.0.1:notaport/db",
		"mysql://u:s3cr3tpw@h/db",
		"mysql://h/db?password=s3cr3tpw",
		"sqlite:x.db?password=s3cr3tpw",
	} {
		for _, o := range []OpenOptions{{}, {ReadOnly: true}, {Create: true}} {
			_, err := OpenWith(ctx, dsn, o)
			if err == nil {
				t.Fatalf("%s: opened", dsn)
			}
			if strings.Contains(err.Error(), "s3cr3tpw") {
				t.Errorf("error shows the secret: %v", err)
			}
		}
	}
}
