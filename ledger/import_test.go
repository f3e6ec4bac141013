package ledger

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t testing.TB, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "ledger.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportJSONErrors(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string // substrings of the error besides the file name
	}{
		{"null release (regression)", `{"version":1,"releases":[null]}`, []string{"releases[0]", "null entry"}},
		{"null after a good one", `{"version":1,"spent":{"u":1},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":2,"cost":1,"list":["a"]},null]}`, []string{"releases[1]", "null entry"}},
		{"negative spent", `{"version":1,"spent":{"u":-0.5},"releases":[]}`, []string{`spent["u"]`, "-0.5"}},
		{"null spent", `{"version":1,"spent":{"u":null}}`, []string{`spent["u"]`, "null"}},
		{"NaN spent", `{"version":1,"spent":{"u":NaN}}`, []string{"not a dplp JSON ledger"}},
		{"negative cost", `{"version":1,"spent":{"u":1},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":2,"cost":-1}]}`, []string{"releases[0]", "cost"}},
		{"k zero", `{"version":1,"spent":{"u":1},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":0,"cost":1}]}`, []string{"releases[0]", "k=0"}},
		{"no user", `{"version":1,"spent":{"u":1},"releases":[{"key":"m","eps_p":0.5,"k":2,"cost":1}]}`, []string{"releases[0]", "user"}},
		{"empty user", `{"version":1,"spent":{"":1},"releases":[]}`, []string{"empty user"}},
		{"no cost", `{"version":1,"spent":{"u":1},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":2}]}`, []string{"releases[0]", "cost"}},
		{"releases exceed spent", `{"version":1,"spent":{"u":0.5},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":2,"cost":1}]}`, []string{"inconsistent"}},
		{"user without spent", `{"version":1,"spent":{},"releases":[{"user":"v","key":"m","eps_p":0.5,"k":2,"cost":1}]}`, []string{"releases[0]", `"v"`, "spent"}},
		{"wrong version", `{"version":2}`, []string{"version 2"}},
		{"no version", `{"spent":{}}`, []string{"version"}},
		{"not JSON", `hello`, []string{"not a dplp JSON ledger"}},
		{"array", `[]`, []string{"not a dplp JSON ledger"}},
		{"trailing data", `{"version":1} {}`, []string{"after the JSON object"}},
	}
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		for _, c := range cases {
			path := writeFile(t, t.TempDir(), c.file)
			n, err := ImportJSON(ctx, s, path)
			if err == nil {
				t.Errorf("%s: imported %d, want an error", c.name, n)
				continue
			}
			for _, w := range append([]string{path}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q lacks %q", c.name, err, w)
				}
			}
		}
		if us, _ := s.Users(ctx); len(us) != 0 {
			t.Fatalf("failed imports recorded %+v", us)
		}
		if _, err := ImportJSON(ctx, s, filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing file: %v", err)
		}
	})
}

// A ledger written by the old package account imports with every user's spending
// equal to the file's figure, and importing it again changes nothing.
func TestImportJSONFromAccount(t *testing.T) {
	eachStore(t, func(t *testing.T, fx fixture) {
		ctx := ctxT(t)
		s := fx.open(t)
		// testdata/account-v1.json was written by the old package account
		// (since removed): alice charged 0.1 x 3 twice for model-1 (the list
		// replaced) and 0.05 x 2 for model-2, bob 0.1 x 3.
		raw, err := os.ReadFile("testdata/account-v1.json")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ledger.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := ImportJSON(ctx, s, path)
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 { // 3 releases in the file + alice's adjustment
			t.Fatalf("imported %d entries, want 4", n)
		}
		// The file's own spending figures (0.1 x 3 + 0.1 x 3 + 0.05 x 2 and 0.1 x 3).
		for u, want := range map[string]float64{"alice": 0.7000000000000001, "bob": 0.30000000000000004} {
			sp, err := s.Budget(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(sp.Spent-want) > 1e-12 {
				t.Fatalf("%s: imported spending %v, file says %v", u, sp.Spent, want)
			}
		}
		l, ok, err := s.Latest(ctx, "bob", "model-1", 3, Crypto)
		if err != nil || !ok || strings.Join(l.List, "|") != "日本||a b" || l.Influencers[0] != "*" {
			t.Fatalf("bob's list %+v %v %v", l, ok, err)
		}
		if l, ok, _ := s.Latest(ctx, "alice", AdjustmentModel+path, 1, Crypto); !ok || math.Abs(l.Cost-0.3) > 1e-12 {
			t.Fatalf("alice's adjustment %+v %v", l, ok)
		}
		before, _ := s.Users(ctx)
		if n, err := ImportJSON(ctx, s, path); err != nil || n != 0 {
			t.Fatalf("second import: %d %v", n, err)
		}
		after, _ := s.Users(ctx)
		if len(before) != len(after) || before[0] != after[0] || before[1] != after[1] {
			t.Fatalf("second import changed spending: %+v -> %+v", before, after)
		}
	})
}

func FuzzImportJSON(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"releases":[null]}`,
		`{"version":1,"spent":{"u":1.5},"releases":[{"user":"u","key":"m","eps_p":0.5,"k":2,"cost":1,"list":["a","b"],"time":"2024-01-02T03:04:05Z","reads":2}]}`,
		`{"version":1,"spent":{"u":-1}}`,
		`{"version":1,"spent":{"a":0,"b":2},"releases":[{"user":"b","key":"","eps_p":0,"k":1,"cost":0,"list":[]}]}`,
		`{"version":1,"spent":{"u":1e308},"releases":[{"user":"u","key":"m","eps_p":1e308,"k":1,"cost":1e308}]}`,
		`{"version":2}`,
		`{}`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+filepath.Join(f.TempDir(), "fuzz.db")+"?synchronous=normal")
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, spent, perr := parseOld(path, data)
		before := map[string]Spend{}
		for u := range spent {
			before[u], _ = s.Budget(ctx, u)
		}
		n, err := ImportJSON(ctx, s, path)
		if (err == nil) != (perr == nil) {
			t.Fatalf("parse error %v but import error %v", perr, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for u, want := range spent {
			sp, err := s.Budget(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			delta := sp.Spent - before[u].Spent
			if n == 0 {
				want = 0 // already imported
			}
			if math.IsInf(sp.Spent, 0) {
				continue // the shared store's running total overflowed
			}
			if math.Abs(delta-want) > 1e-9*math.Max(1, math.Max(want, sp.Spent)) {
				t.Fatalf("user %q: imported %v, file says %v (imported %d entries)", u, delta, want, n)
			}
		}
	})
}
