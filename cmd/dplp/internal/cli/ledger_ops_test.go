package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplp/dplp/ledger"
)

// Read-only ledger commands on a missing store fail and create nothing.
func TestLedgerReadCommandsCreateNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	for _, args := range [][]string{
		{"ledger", "show", "--store", "sqlite:" + missing},
		{"ledger", "exposure", "--store", "sqlite:" + missing},
		{"ledger", "verify", "--store", "sqlite:" + missing},
		{"ledger", "show", "--store", "sqlite:" + filepath.Join(dir, "sub", "x.db"), "--json"},
	} {
		_, _, err := run(t, args...)
		if !errors.Is(err, ledger.ErrNoLedger) || !strings.Contains(err.Error(), "ledger init") {
			t.Errorf("%v: got %v, want a no-ledger error saying how to create one", args, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("read-only commands created %v", ents)
	}
}

// ledger init creates a ledger once; verify passes on it and fails,
// naming the row, on a hand-edited negative spend.
func TestLedgerInitVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ledger.db")
	store := "sqlite:" + path
	for _, want := range []string{"created a ledger at " + store, "is up to date"} {
		out, _, err := run(t, "ledger", "init", "--store", store)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("init: %q %v, want %q", out, err, want)
		}
	}
	s, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Charge(context.Background(), ledger.Release{User: "u", Model: "m", K: 2, EpsP: 0.5, Cost: 1, Rho: 0.0625}, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, _, err := run(t, "ledger", "verify", "--store", store)
	if err != nil || !strings.Contains(out, "ok: ") || !strings.Contains(out, "1 releases") {
		t.Fatalf("verify on a consistent ledger: %q %v", out, err)
	}

	// The hand edit of the issue (the CHECK constraint refuses it, so the
	// edit switches it off first, as a determined editor could).
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "UPDATE spend SET spent = -100"); err == nil {
		t.Fatal("the CHECK constraint accepted a negative spend")
	}
	for _, st := range []string{"PRAGMA ignore_check_constraints = ON", "UPDATE spend SET spent = -100"} {
		if _, err := conn.ExecContext(context.Background(), st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	conn.Close()
	for _, args := range [][]string{{"ledger", "verify", "--store", store}, {"ledger", "verify", "--store", store, "--json"}} {
		out, _, err = run(t, args...)
		if err == nil {
			t.Fatalf("%v passed a negative spend: %s", args, out)
		}
		for _, want := range []string{`spend row of user "u": spent -100 (want finite, >= 0)`, "releases cost 1 in total"} {
			if !strings.Contains(err.Error()+out, want) {
				t.Errorf("%v: %v %s does not say %q", args, err, out, want)
			}
		}
	}
}

// The default store is one absolute path whatever the working directory,
// printed when used: a cap of one list holds across two directories.
func TestDefaultStoreAcrossWorkingDirectories(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("XDG_STATE_HOME", state)
	g := filepath.Join(dir, "g.txt")
	if _, _, err := run(t, "gen", "latent", "--n", "200", "--mean-degree", "10", "--out", g); err != nil {
		t.Fatal(err)
	}
	prot := filepath.Join(dir, "prot.txt")
	var marks strings.Builder
	for i := 0; i+1 < 200; i += 2 { // every node has a protected pair: user 0's list costs eps_p per pick
		fmt.Fprintf(&marks, "%d %d\n", i, i+1)
	}
	if err := os.WriteFile(prot, []byte(marks.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, "m.json")
	if _, stderr, err := run(t, "train", "--graph", g, "--protected", prot, "--score", "cn", "--variant", "dplp", "--eps", "0.5", "--epochs", "2", "--out", mp); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	// K=2 at eps_p 0.5: one list costs at most 1; the cap allows one.
	args := []string{"recommend", "--model", mp, "--graph", g, "--protected", prot, "--user", "0", "--k", "2", "--fresh", "--user-budget", "1", "--format", "jsonl"}
	want := "using the default ledger store sqlite:" + filepath.Join(state, "dplp", "ledger.db")

	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(a)
	if _, stderr, err := run(t, args...); err == nil || !errors.Is(err, ledger.ErrNoLedger) || !strings.Contains(stderr, want) {
		t.Fatalf("recommend without a ledger and without --create: %v\n%s", err, stderr)
	}
	out, stderr, err := run(t, append(args, "--create")...)
	if err != nil || !strings.Contains(stderr, want) || !strings.Contains(out, `"cost":1`) {
		t.Fatalf("first list: %v\n%s\n%s", err, out, stderr)
	}
	t.Chdir(b)
	_, stderr, err = run(t, append(args, "--create")...)
	var ec exitCode
	if !errors.As(err, &ec) || ec != 3 || !strings.Contains(stderr, want) {
		t.Fatalf("second list from another directory: %v (want exit status 3: refused by the cap)\n%s", err, stderr)
	}
	for _, d := range []string{a, b} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Fatalf("a ledger appeared in the working directory %s: %v", d, ents)
		}
	}
}

// A password in the store name never appears in any output.
func TestStorePasswordNeverPrinted(t *testing.T) {
	const secret = "hunter2secret"
	for _, dsn := range []string{
		"postgres://u@127.0.0.1:1/db?password=" + secret + "&connect_timeout=2",
		"postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?sslpassword=" + secret + "&sslkey=/k/" + secret + ".pem&sslmode=disable&connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?password=" + secret + "&sslmode=nonsense",
		"mysql://u:" + secret + "@h/db",
		"sqlite:x.db?password=" + secret,
	} {
		for _, args := range [][]string{
			{"ledger", "show", "--store", dsn},
			{"ledger", "exposure", "--store", dsn},
			{"ledger", "verify", "--store", dsn},
			{"ledger", "init", "--store", dsn},
			{"ledger", "import", "x.json", "--store", dsn, "--create"},
		} {
			out, stderr, err := run(t, args...)
			if err == nil {
				t.Fatalf("%v: no error", args)
			}
			if all := out + stderr + err.Error(); strings.Contains(all, secret) {
				t.Errorf("%v printed the secret: %s", args[:2], all)
			}
		}
	}
}

// A writing command that waits for another process's SQLite lock says so
// on stderr after about a second, then proceeds when the lock is released.
func TestLedgerLockWaitNotice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	store := "sqlite:" + path
	if _, _, err := run(t, "ledger", "init", "--store", store); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(2 * time.Second)
		conn.ExecContext(context.Background(), "COMMIT")
		close(released)
	}()
	out, stderr, err := run(t, "ledger", "init", "--store", store) // migrate takes the write lock
	<-released
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("init after the wait: %q %v\n%s", out, err, stderr)
	}
	if want := "waiting for the ledger lock on " + store + "..."; strings.Count(stderr, want) != 1 {
		t.Fatalf("stderr %q, want one %q", stderr, want)
	}
}
