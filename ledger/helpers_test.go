package ledger

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresEnv names the PostgreSQL server the tests use.
const postgresEnv = "DPLP_TEST_POSTGRES_DSN"

// fixture is one kind of store under test; each call of dsn gives a fresh,
// empty store (a new SQLite file, or a new PostgreSQL schema).
type fixture struct {
	name string
	// dsn returns the name of a fresh empty store, removed at cleanup.
	dsn func(t *testing.T) string
}

// sqlite reports whether the fixture is an SQLite store (with or without
// the charge journal).
func (f fixture) sqlite() bool { return strings.HasPrefix(f.name, "sqlite") }

// skipJournal skips a subtest that needs two handles writing one ledger,
// which the charge journal (the only writer) refuses by design.
func (f fixture) skipJournal(t *testing.T) {
	t.Helper()
	if f.name == journalFixture.name {
		t.Skip("two writing handles on one ledger: the charge journal refuses them by design (TestJournalExclusive)")
	}
}

func (f fixture) open(t *testing.T) Store {
	t.Helper()
	return openDSN(t, f.dsn(t))
}

func openDSN(t *testing.T, dsn string) Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var sqliteFixture = fixture{"sqlite", func(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
}}

// journalFixture is SQLite with the charge journal on: the applier waits
// long (journalForTests), so most reads find charges still pending.
var journalFixture = fixture{"sqlite-journal", func(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "ledger.db") + "?charge_journal=on"
}}

var postgresFixture = fixture{"postgres", func(t *testing.T) string {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skipf("PostgreSQL store not tested: set %s to a PostgreSQL URL (for example postgres://postgres@/dplp?host=/tmp/sockdir), or run `source .ci/postgres.sh` to start a throwaway server that sets it", postgresEnv)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	crand.Read(b[:])
	schema := "ledger_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}}

// eachStore runs f as a subtest for every kind of store; PostgreSQL subtests
// skip (saying how to enable them) when no server is configured.
func eachStore(t *testing.T, f func(t *testing.T, fx fixture)) {
	for _, fx := range []fixture{sqliteFixture, journalFixture, postgresFixture} {
		t.Run(fx.name, func(t *testing.T) { f(t, fx) })
	}
}

// Child processes: the test binary re-executed with childEnv set.
const childEnv = "DPLP_LEDGER_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child runs in a separate OS process. It charges the store named by
// DPLP_LEDGER_TEST_DSN and prints one line per outcome:
//
//	ok ID COST     a committed charge (printed after Charge returned)
//	refused        a *BudgetError
func child(mode string) int {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("DPLP_LEDGER_TEST_DSN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer s.Close()
	user := os.Getenv("DPLP_LEDGER_TEST_USER")
	n, _ := strconv.Atoi(os.Getenv("DPLP_LEDGER_TEST_N"))
	capEps, _ := strconv.ParseFloat(os.Getenv("DPLP_LEDGER_TEST_CAP"), 64)
	switch mode {
	case "charge": // n charges against a cap, all children starting together
		if at, err := strconv.ParseInt(os.Getenv("DPLP_LEDGER_TEST_START"), 10, 64); err == nil {
			time.Sleep(time.Until(time.Unix(0, at)))
		}
		for i := 0; i < n; i++ {
			// A little think time between charges, as a real client has: a
			// process that re-takes SQLite's write lock immediately after each
			// commit can starve the other (its busy handler polls).
			time.Sleep(time.Duration(rand.N(2000)) * time.Microsecond)
			cost := costOf(i)
			r, _, err := s.Charge(ctx, testRelease(user, fmt.Sprintf("%d-%d", os.Getpid(), i), cost), Cap{capEps, capEps, math.Inf(1)})
			var be *BudgetError
			switch {
			case err == nil:
				fmt.Printf("ok %d %v\n", r.ID, r.Cost)
			case errors.As(err, &be):
				fmt.Println("refused")
			default:
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
		}
	case "loop": // charge until killed
		for i := 0; ; i++ {
			r, _, err := s.Charge(ctx, testRelease(user, strconv.Itoa(i), 0.125), Unlimited)
			if err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
			fmt.Printf("ok %d %v\n", r.ID, r.Cost)
		}
	default:
		fmt.Fprintln(os.Stderr, "child: unknown mode", mode)
		return 2
	}
	return 0
}

// costOf gives varied costs that are exact binary fractions, so that sums
// are exact in any order.
func costOf(i int) float64 { return []float64{0.25, 0.5, 0, 0.125, 1}[i%5] }

// testRelease is a release of cost for user whose list names its tag.
func testRelease(user, tag string, cost float64) Release {
	return Release{
		User: user, Model: "test-model", K: 4, EpsP: cost / 4, Cost: cost, Rho: cost * cost / 2,
		List: []string{"a-" + tag, "b-" + tag, "ünïcödé " + tag, ""}, Influencers: []string{"w1", "w2"},
	}
}

// applied applies the charge journal's pending charges of s (when it has
// a journal), for tests that read or edit the tables directly.
func applied(t *testing.T, s Store) {
	t.Helper()
	if err := s.(*sqlStore).flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// releaseIDs returns every recorded release ID (white-box).
func releaseIDs(t *testing.T, s Store) map[int64]Release {
	t.Helper()
	ctx := context.Background()
	out := map[int64]Release{}
	if err := s.(*sqlStore).flush(ctx); err != nil {
		t.Fatal(err)
	}
	err := s.(*sqlStore).b.read(ctx, func(q querier) error {
		rs, err := q.query(ctx, "SELECT "+releaseCols+" FROM releases")
		if err != nil {
			return err
		}
		var got []Release
		for rs.Next() {
			r, err := scanRelease(rs)
			if err != nil {
				rs.Close()
				return err
			}
			got = append(got, r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		for i := range got {
			if err := resolveReleases(ctx, q, &s.(*sqlStore).labels, []*Release{&got[i]}); err != nil {
				return err
			}
			out[got[i].ID] = got[i]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
