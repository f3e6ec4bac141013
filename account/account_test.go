package account

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLedger(t *testing.T) {
	l := New()
	if _, ok := l.Lookup("u", "m"); ok {
		t.Fatal("empty ledger has a release")
	}
	cost, err := l.Record("u", "m", 0.1, 30, []string{"a", "b"})
	if err != nil || cost < 2.999 || cost > 3.001 {
		t.Fatalf("cost %v err %v", cost, err)
	}
	list, ok := l.Lookup("u", "m")
	if !ok || len(list) != 2 || l.Spent("u") != cost {
		t.Fatal("re-read must be free and return the released list")
	}
	l.Record("u", "m", 0.1, 30, []string{"c"})
	if got := l.Spent("u"); got < 5.99 || got > 6.01 {
		t.Fatalf("fresh sample must be charged again, spent %v", got)
	}
	l.Record("v", "m", 0.5, 2, nil)
	if tot, users := l.Total(); users != 2 || tot < 6.99 || tot > 7.01 {
		t.Fatalf("total %v users %d", tot, users)
	}
	if m := l.MaxSpent(); m < 5.99 || m > 6.01 {
		t.Fatalf("max %v", m)
	}
	for _, bad := range []struct {
		eps float64
		k   int
	}{{-1, 3}, {0.1, 0}} {
		if _, err := l.Record("u", "m", bad.eps, bad.k, nil); err == nil {
			t.Fatalf("accepted %+v", bad)
		}
	}
	p := filepath.Join(t.TempDir(), "ledger.json")
	if err := l.Save(p); err != nil {
		t.Fatal(err)
	}
	back, err := Load(p)
	if err != nil || back.Spent("u") != l.Spent("u") {
		t.Fatalf("round trip: %v", err)
	}
	if list, ok := back.Lookup("u", "m"); !ok || list[0] != "c" {
		t.Fatal("release lost in round trip")
	}
	os.WriteFile(p, []byte(`{"version": 9}`), 0o600)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("wrong version accepted: %v", err)
	}
	os.WriteFile(p, []byte(`garbage`), 0o600)
	if _, err := Load(p); err == nil {
		t.Fatal("garbage accepted")
	}
	if l, err := Load(filepath.Join(t.TempDir(), "none.json")); err != nil || l.MaxSpent() != 0 {
		t.Fatal("missing ledger must be empty")
	}
}
