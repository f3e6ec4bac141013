package ledger

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A missing ledger is an error without Create, and nothing is created.
func TestOpenMissingCreatesNothing(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		o    OpenOptions
	}{
		{"read-only", OpenOptions{ReadOnly: true}},
		{"read-write", OpenOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "sub", "missing.db")
			_, err := OpenWith(ctx, "sqlite:"+path, tc.o)
			if !errors.Is(err, ErrNoLedger) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want ErrNoLedger naming %s", err, path)
			}
			if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("something was created: %v", err)
			}
		})
	}
	// An existing empty file is no ledger either (and stays empty).
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []OpenOptions{{ReadOnly: true}, {}} {
		if _, err := OpenWith(ctx, "sqlite:"+empty, o); !errors.Is(err, ErrNoLedger) {
			t.Fatalf("empty file %+v: got %v, want ErrNoLedger", o, err)
		}
	}
	// Create makes the directories and the ledger; then every mode opens it.
	path := filepath.Join(dir, "a", "b", "l.db")
	s, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, o := range []OpenOptions{{ReadOnly: true}, {}} {
		s, err := OpenWith(ctx, "sqlite:"+path, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		s.Close()
	}
	if _, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{Create: true, ReadOnly: true}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Create+ReadOnly: %v", err)
	}
}

func TestOpenMissingPostgres(t *testing.T) {
	ctx := ctxT(t)
	dsn := postgresFixture.dsn(t) // an empty schema
	for _, o := range []OpenOptions{{ReadOnly: true}, {}} {
		if _, err := OpenWith(ctx, dsn, o); !errors.Is(err, ErrNoLedger) {
			t.Fatalf("%+v: got %v, want ErrNoLedger", o, err)
		}
	}
	s := openDSN(t, dsn) // Open creates
	if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchema {
		t.Fatalf("version %d %v", v, err)
	}
}

// A database with tables that is not a dplp ledger is refused in every
// mode and left untouched.
func TestOpenForeignRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		setup := []string{`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)`}
		if fx.sqlite() {
			// Another tool's schema_migrations (golang-migrate's shape).
			setup = append(setup, `CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, dirty BOOLEAN NOT NULL)`)
		}
		foreignExec(t, fx, dsn, setup...)
		for _, o := range []OpenOptions{{Create: true}, {}, {ReadOnly: true}} {
			_, err := OpenWith(ctx, dsn, o)
			if !errors.Is(err, ErrNotLedger) || !strings.Contains(err.Error(), "untouched") {
				t.Fatalf("%+v: got %v, want ErrNotLedger", o, err)
			}
		}
		// No dplp table was added.
		got := foreignTables(t, fx, dsn)
		for _, tab := range []string{"releases", "spend", "exposure", "tokens", "marks"} {
			if strings.Contains(got, tab) {
				t.Fatalf("table %s added to a foreign database: %s", tab, got)
			}
		}
	})
}

// foreignExec runs statements on the database dsn names, outside the
// package's store (as another tool would).
func foreignExec(t *testing.T, fx fixture, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	b, err := rawBackend(ctx, fx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	for _, st := range stmts {
		if err := b.read(ctx, func(q querier) error { return q.exec(ctx, st) }); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

func foreignTables(t *testing.T, fx fixture, dsn string) string {
	t.Helper()
	ctx := context.Background()
	b, err := rawBackend(ctx, fx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	var tables []string
	err = b.read(ctx, func(q querier) error {
		query := "SELECT name FROM sqlite_master WHERE type = 'table'"
		if fx.name == "postgres" {
			query = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
		}
		var err error
		tables, err = queryStrings(ctx, q, query)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(tables, ",")
}

// rawBackend is a backend on dsn without any of the store's checks.
func rawBackend(ctx context.Context, fx fixture, dsn string) (backend, error) {
	if fx.sqlite() {
		db, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite:"))
		if err != nil {
			return nil, err
		}
		return newSQLiteBackend(db, OpenOptions{}), nil
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 1
	return newPGBackend(ctx, cfg, OpenOptions{})
}

// Read-only stores read everything, write nothing, and refuse old schemas.
func TestReadOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		rw := openDSN(t, dsn)
		for i, u := range []string{"u1", "u2", "u1"} {
			if _, _, err := rw.Charge(ctx, testRelease(u, string(rune('a'+i)), 0.5), Unlimited); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rw.Exposure(ctx, 0); err != nil { // folds the first three
			t.Fatal(err)
		}
		r := testRelease("u3", "late", 0.25)
		r.Influencers = []string{"w2", "w9"}
		if _, _, err := rw.Charge(ctx, r, Unlimited); err != nil { // left unfolded
			t.Fatal(err)
		}
		applied(t, rw) // a read-only handle reads the tables
		ro, err := OpenWith(ctx, dsn, OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		got, err := ro.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		users, err := ro.Users(ctx)
		if err != nil || len(users) != 3 || users[0].Spent != 1 {
			t.Fatalf("read-only Users: %+v %v", users, err)
		}
		// The read-only exposure counted the unfolded release without
		// folding it: the writer's fold now gives the same numbers.
		want, err := rw.Exposure(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("read-only exposure %+v, read-write %+v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("read-only exposure %+v, read-write %+v", got, want)
			}
		}
		if got[0].Party != "w2" || got[0].Eps != 1.75 {
			t.Fatalf("exposure %+v, want w2 first at 1.75", got)
		}
		writes := map[string]func() error{
			"Charge":   func() error { _, _, err := ro.Charge(ctx, testRelease("u1", "x", 0.5), Unlimited); return err },
			"PutToken": func() error { return ro.PutToken(ctx, "u1", []byte{1}) },
			"SetMarks": func() error { return ro.SetMarks(ctx, "u1", []string{"a"}) },
		}
		for name, w := range writes {
			if err := w(); !errors.Is(err, ErrReadOnly) {
				t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
			}
		}
		if sp, _ := rw.Budget(ctx, "u1"); sp.Spent != 1 || sp.Releases != 2 {
			t.Fatalf("a read-only write changed the ledger: %+v", sp)
		}

		// An old schema: read-only refuses it and does not migrate.
		old := fx.dsn(t)
		s, err := openAt(ctx, old, 3, OpenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if _, err := OpenWith(ctx, old, OpenOptions{ReadOnly: true}); !errors.Is(err, ErrSchemaOld) || !strings.Contains(err.Error(), "ledger init") {
			t.Fatalf("old schema read-only: %v", err)
		}
		s2, err := openAt(ctx, old, 3, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if v, _ := s2.SchemaVersion(ctx); v != 3 {
			t.Fatalf("a read-only open migrated the store to %d", v)
		}
	})
}

// The SQLite file is not modified by a read-only open and read.
func TestReadOnlySQLiteLeavesFileAlone(t *testing.T) {
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Charge(ctx, testRelease("u", "a", 0.5), Unlimited); err != nil {
		t.Fatal(err)
	}
	s.Close() // checkpoints the WAL into the file
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Exposure(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, ro); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("a read-only open changed the database file")
	}
}

// The lock-wait notice is given once after LockNotice while another
// connection holds the lock, and the write still succeeds afterwards.
func TestLockWaitNotice(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		fx.skipJournal(t)
		ctx := ctxT(t)
		dsn := fx.dsn(t)
		holder := openDSN(t, dsn).(*sqlStore)
		if _, _, err := holder.Charge(ctx, testRelease("u", "first", 0.5), Unlimited); err != nil {
			t.Fatal(err)
		}
		var notices atomic.Int32
		waiter, err := OpenWith(ctx, dsn, OpenOptions{LockWait: func() { notices.Add(1) }, LockNotice: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Close()
		if n := notices.Load(); n != 0 {
			t.Fatalf("%d notices without a wait", n)
		}
		locked, release := make(chan struct{}), make(chan struct{})
		held := make(chan error, 1)
		go func() {
			held <- holder.b.write(ctx, func(q querier) error {
				if _, err := lockSpends(ctx, q, []string{"u"}, 0, holder.b.foldLock() == ""); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
		}()
		<-locked
		charged := make(chan error, 1)
		go func() {
			_, _, err := waiter.Charge(ctx, testRelease("u", "second", 0.5), Unlimited)
			charged <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for notices.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if notices.Load() != 1 {
			t.Fatalf("%d notices while the lock was held", notices.Load())
		}
		select {
		case err := <-charged:
			t.Fatalf("the charge finished while the lock was held: %v", err)
		default:
		}
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		if err := <-charged; err != nil {
			t.Fatal(err)
		}
		if n := notices.Load(); n != 1 {
			t.Fatalf("%d notices, want 1", n)
		}
		if sp, _ := waiter.Budget(ctx, "u"); sp.Spent != 1 {
			t.Fatalf("spent %v, want 1", sp.Spent)
		}
	})
}
