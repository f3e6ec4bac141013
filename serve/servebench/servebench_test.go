package servebench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dplp/dplp"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
)

// TestLoadPhase runs loadPhase's clients (par.Team) against an operation
// that fails every third call: every request is counted once, as ok or as
// an error, with the first error's text; a cancelled context ends the phase
// before its duration.
func TestLoadPhase(t *testing.T) {
	var calls atomic.Int64
	op := func(*rand.Rand) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("boom")
		}
		return nil
	}
	rep := loadPhase(context.Background(), 3, 20*time.Millisecond, op)
	if rep.Requests != calls.Load() || rep.OK+rep.Errors != rep.Requests || rep.Errors == 0 || rep.FirstError != "boom" {
		t.Fatalf("report %+v after %d calls", rep, calls.Load())
	}
	if !(rep.Seconds >= 0.02) || rep.Throughput <= 0 || rep.P50ms > rep.P99ms || rep.P99ms > rep.Maxms {
		t.Fatalf("report %+v", rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := loadPhase(ctx, 2, time.Hour, op); rep.Requests != 0 {
		t.Fatalf("cancelled phase sent %d requests", rep.Requests)
	}
}

// TestParsePhases: every known phase, in any order and
// with spaces, and an error for anything else (nothing is run then).
func TestParsePhases(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Phases
		err  bool
	}{
		{"sticky,fresh,idempotent", Phases{Sticky: true, Fresh: true, Idempotent: true}, false},
		{"idempotent", Phases{Idempotent: true}, false},
		{" fresh , idempotent", Phases{Fresh: true, Idempotent: true}, false},
		{"sticky", Phases{Sticky: true}, false},
		{"fresh,idem", Phases{}, true},
		{"", Phases{}, true},
	} {
		got, err := ParsePhases(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParsePhases(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestDoIdempotencyKey: do sends the Idempotency-Key header only
// when a key is given, and a non-2xx reply is an error.
func TestDoIdempotencyKey(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, strings.Join(r.Header.Values("Idempotency-Key"), "|"))
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"fresh":true}`))
	}))
	defer srv.Close()
	var out struct{ Fresh bool }
	if err := do(srv.Client(), "POST", srv.URL, "tok", "k-1", nil, &out); err != nil || !out.Fresh {
		t.Fatalf("with a key: %+v, %v", out, err)
	}
	if err := do(srv.Client(), "POST", srv.URL, "tok", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := do(srv.Client(), "POST", srv.URL, "bad", "", nil, nil); err == nil {
		t.Fatal("a 401 reply was not an error")
	}
	if want := []string{"k-1", "", ""}; !slices.Equal(got, want) {
		t.Fatalf("Idempotency-Key headers %q, want %q", got, want)
	}
}

// TestRun drives a real in-process service through every phase on a small
// graph: requests succeed, the report carries the run's shape, idempotent
// POSTs are fresh under their new keys, and bad options are refused.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	var edges strings.Builder
	const n = 60
	for i := range n {
		fmt.Fprintf(&edges, "%d %d\n%d %d\n", i, (i+1)%n, i, (i+7)%n)
	}
	gp, mp, pp := filepath.Join(dir, "g.txt"), filepath.Join(dir, "m.json"), filepath.Join(dir, "p.txt")
	if err := os.WriteFile(gp, []byte(edges.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pp, []byte("0 1\n5 12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, _, err := graph.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	prot, err := protect.ReadFile(pp, g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dplp.Train(context.Background(), g, prot, dplp.TrainSpec{Score: "cn", Variant: "lin", EpsP: 1, Epochs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Save(mp, m); err != nil {
		t.Fatal(err)
	}
	opt := Options{Graph: g, GraphPath: gp, ProtectedPath: pp, ModelPath: mp, StoreDSN: "sqlite:" + filepath.Join(dir, "l.db"),
		K: 5, Users: 4, Concurrency: 2, Duration: 150 * time.Millisecond, Phases: Phases{Sticky: true, Fresh: true, Idempotent: true}}
	rep, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Users != 4 || rep.Nodes != n || rep.K != 5 || rep.Model == "" || rep.Store != "sqlite (synchronous=FULL)" {
		t.Fatalf("report %+v", rep)
	}
	for name, ph := range map[string]PhaseReport{"sticky": rep.Sticky, "fresh": rep.Fresh, "idempotent": rep.Idempotent} {
		if ph.OK == 0 || ph.Errors != 0 {
			t.Fatalf("%s phase: %+v", name, ph)
		}
	}
	if rep.IdempotentOverFresh <= 0 || rep.ChargesPerCommit <= 0 || rep.FreshOverSticky <= 0 || rep.CommitMs <= 0 {
		t.Fatalf("ratios: %+v", rep)
	}
	// Every fresh request charges: the store's charge calls are counted
	// (at most one per request, fewer when grouped).
	if c := rep.Fresh.StorePerRequest["charge"]; c <= 0 || c > 1 {
		t.Fatalf("fresh phase: %v charge calls per request", c)
	}
	bad := opt
	bad.Phases = Phases{}
	if _, err := Run(context.Background(), bad); err == nil {
		t.Fatal("no phase: accepted")
	}
}

// TestStorePerRequest: the timed store's counters are read from the
// metrics text (comments, other series and unparsable lines skipped) and
// turned into calls per request, operations without calls left out.
func TestStorePerRequest(t *testing.T) {
	before := parseMetrics([]byte(`# HELP dplp_store_duration_seconds x
# TYPE dplp_store_duration_seconds histogram
dplp_store_duration_seconds_count{op="charge"} 10
dplp_store_duration_seconds_count{op="token_hash"} 4
dplp_store_duration_seconds_sum{op="charge"} 0.5
dplp_group_commit_items_sum 40
not a sample
`))
	after := parseMetrics([]byte(`dplp_store_duration_seconds_count{op="charge"} 35
dplp_store_duration_seconds_count{op="token_hash"} 4
dplp_store_duration_seconds_count{op="budget"} 50
dplp_store_duration_seconds_sum{op="charge"} 1.5
dplp_group_commit_items_sum 140
`))
	if before[chargeSum] != 0.5 || before[groupSum] != 40 || after[chargeCount] != 35 {
		t.Fatalf("parsed %v and %v", before, after)
	}
	for _, c := range []struct {
		requests int64
		want     map[string]float64
	}{
		{100, map[string]float64{"charge": 0.25, "budget": 0.5}},
		{0, nil},
	} {
		got := storePerRequest(before, after, c.requests)
		if len(got) != len(c.want) || (c.want == nil) != (got == nil) {
			t.Fatalf("%d requests: %v, want %v", c.requests, got, c.want)
		}
		for op, v := range c.want {
			if got[op] != v {
				t.Fatalf("%d requests: %v, want %v", c.requests, got, c.want)
			}
		}
	}
}

// TestStoreKind: the report names the store and its durability, never the
// DSN (a PostgreSQL DSN may hold a password).
func TestStoreKind(t *testing.T) {
	for _, c := range []struct {
		dsn     string
		journal bool
		want    string
	}{
		{"sqlite:/tmp/x/ledger.db", false, "sqlite (synchronous=FULL)"},
		{"sqlite:/tmp/x/ledger.db?synchronous=full", false, "sqlite (synchronous=FULL)"},
		{"sqlite:/tmp/x/ledger.db?synchronous=NORMAL", false, "sqlite (synchronous=NORMAL: a charge acknowledged just before a power loss may be lost)"},
		{"sqlite:/tmp/x/ledger.db", true, "sqlite (synchronous=FULL; charge journal)"},
		{"sqlite:/tmp/x/ledger.db?charge_journal=on", false, "sqlite (synchronous=FULL; charge journal)"},
		{"postgres://u:secret@h/db?sslmode=disable", false, "postgres"},
	} {
		if got := storeKind(c.dsn, c.journal); got != c.want {
			t.Errorf("storeKind(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}
