package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
)

// oldLedger is a JSON ledger in the old account format (written by the
// removed package account: alice charged 0.125 x 2 twice for m1, bob
// 0.25 x 2), copied to a temporary file.
func oldLedger(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/account-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ledger.json")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLedgerImportShow(t *testing.T) {
	store := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	file := oldLedger(t)
	out, _, err := run(t, "ledger", "import", file, "--store", store, "--create")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "imported 3 entries") || !strings.Contains(out, "2 users, total spent 1") {
		t.Fatalf("import output: %s", out)
	}
	out, _, err = run(t, "ledger", "import", file, "--store", store)
	if err != nil || !strings.Contains(out, "nothing new") {
		t.Fatalf("second import: %s %v", out, err)
	}

	out, _, err = run(t, "ledger", "show", "--store", store, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"total_spent", "users"}) {
		t.Fatalf("keys %v", keys)
	}
	var got ledgerShowJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := ledgerShowJSON{Users: []ledgerUserJSON{{User: "alice", Spent: 0.5, Releases: 2}, {User: "bob", Spent: 0.5, Releases: 1}}, TotalSpent: 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("show --json: %s", out)
	}
	for _, u := range m["users"].([]any) {
		var uk []string
		for k := range u.(map[string]any) {
			uk = append(uk, k)
		}
		sort.Strings(uk)
		if !reflect.DeepEqual(uk, []string{"releases", "spent", "user"}) {
			t.Fatalf("user keys %v", uk)
		}
	}

	out, _, err = run(t, "ledger", "show", "--store", store)
	if err != nil || !strings.Contains(out, "alice") || !strings.Contains(out, "2 users, total spent 1") {
		t.Fatalf("show table: %s %v", out, err)
	}
}

func TestLedgerShowEmptyAndSeeded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	store := "sqlite:" + path
	s, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "ledger", "show", "--store", store, "--json")
	if err != nil || strings.TrimSpace(out) != `{"users":[],"total_spent":0}` {
		t.Fatalf("empty store: %q %v", out, err)
	}
	if _, _, err := s.Charge(context.Background(), ledger.Release{User: "u", Model: "m", K: 1, EpsP: 1, Cost: 1, Seeded: true}, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, stderr, err := run(t, "ledger", "show", "--store", store)
	if err != nil || !strings.Contains(stderr, "seeded") {
		t.Fatalf("seeded release not flagged: %q %v", stderr, err)
	}
}

func TestLedgerExposure(t *testing.T) {
	store := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	// Parties p1..p10 with exposure 1..10, plus 0.5 for everyone.
	var rs []ledger.Release
	for i := 1; i <= 10; i++ {
		for j := i; j <= 10; j++ {
			rs = append(rs, ledger.Release{User: "u", Model: "m", K: 1, EpsP: 1, Cost: 1, Influencers: []string{"p" + string(rune('0'+j-1))}})
		}
	}
	rs = append(rs, ledger.Release{User: "v", Model: "m", K: 1, EpsP: 0.5, Cost: 0.5, Influencers: []string{"*"}})
	if _, err := s.ChargeBatch(context.Background(), rs, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	s.Close()

	out, _, err := run(t, "ledger", "exposure", "--store", store, "--top", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got exposureJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Parties) != 3 || got.Parties[0].Party != "p9" || got.Parties[0].Eps != 10.5 || got.Parties[2].Eps != 8.5 {
		t.Fatalf("top 3: %s", out)
	}
	if got.Unlisted.Party != "*" || got.Unlisted.Eps != 0.5 {
		t.Fatalf("unlisted: %s", out)
	}
	sm := got.Summary
	if sm.Count != 10 || math.Abs(sm.Mean-6) > 1e-12 || sm.P50 != 5.5 || sm.P90 != 9.5 || sm.Max != 10.5 {
		t.Fatalf("summary: %+v", sm)
	}
	out, _, err = run(t, "ledger", "exposure", "--store", store)
	if err != nil || !strings.Contains(out, "p9") || !strings.Contains(out, "(every other party)") || !strings.Contains(out, "10 named parties") {
		t.Fatalf("table: %s %v", out, err)
	}
}

func TestLedgerErrors(t *testing.T) {
	bad := writeTemp(t, "bad.json", `{"version":1,"releases":[null]}`)
	store := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "show", "--store", "sqlite:" + filepath.Join(t.TempDir(), "missing.db")}, "no ledger"},
		{[]string{"ledger", "show", "--store", "mysql://x"}, "unknown store"},
		{[]string{"ledger", "import", bad, "--store", store, "--create"}, "releases[0]"},
		{[]string{"ledger", "import", "--store", store}, "accepts 1 arg"},
		{[]string{"ledger", "exposure", "--store", store, "--top", "-1"}, "--top"},
	}
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if _, _, err := run(t, "ledger", "import", bad, "--store", store); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("import error does not name the file: %v", err)
	}
}

// TestLedgerReadBesideJournal: the read-only ledger commands work while a
// process with the charge journal has the ledger open and say on stderr
// that its last charges may be missing; a writing command is refused.
func TestLedgerReadBesideJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := ledger.OpenWith(ctx, "sqlite:"+path, ledger.OpenOptions{Create: true, ChargeJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := ledger.Release{User: "alice", Model: "m", K: 2, EpsP: 0.5, Cost: 1, List: []string{"x", "y"}}
	if _, _, err := st.Charge(ctx, r, ledger.Unlimited); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ledger", "show", "--json"}, {"ledger", "verify"}, {"ledger", "exposure"}} {
		out, stderr, err := run(t, append(args, "--store", "sqlite:"+path)...)
		if err != nil {
			t.Fatalf("%v beside the journal: %v\n%s", args, err, stderr)
		}
		if !strings.Contains(stderr, "note: a process with the charge journal") || strings.Contains(out, "charge journal") {
			t.Fatalf("%v: stdout %q, stderr %q", args, out, stderr)
		}
	}
	if _, stderr, err := run(t, "ledger", "init", "--store", "sqlite:"+path); err == nil || !strings.Contains(err.Error()+stderr, "only writer") {
		t.Fatalf("ledger init beside the journal: %v %s", err, stderr)
	}
}
