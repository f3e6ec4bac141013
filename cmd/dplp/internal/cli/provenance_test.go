package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/ledger"
)

// jsonlLines decodes recommend's JSONL output.
func jsonlLines(t *testing.T, out string) []recLine {
	t.Helper()
	var lines []recLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &raw); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, ok := raw["seeded"]; !ok {
			t.Fatalf("line without a seeded field: %s", l)
		}
		var r recLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, r)
	}
	return lines
}

// A store holding seeded releases never yields them to recommend without
// --seed: the private run releases and charges private lists (and says so
// in its data), re-serves those afterwards, and a --seed run still
// re-serves its own seeded lists, marked seeded in JSONL, CSV and table.
func TestRecommendProvenance(t *testing.T) {
	dir, g, prot, mp := smallModel(t)
	store := "sqlite:" + filepath.Join(dir, "ledger.db")
	base := []string{"recommend", "--model", mp, "--graph", g, "--protected", prot, "--user", "0,7", "--k", "5", "--store", store, "--create"}
	rec := func(extra ...string) ([]recLine, string) {
		t.Helper()
		out, stderr, err := run(t, append(slices.Clone(base), extra...)...)
		if err != nil {
			t.Fatalf("recommend %v: %v\n%s", extra, err, stderr)
		}
		return jsonlLines(t, out), stderr
	}
	// check: two lines of 5, seeded as wanted; fresh lists (charged, the
	// summary says so) or re-served ones (cost 0).
	check := func(what string, got []recLine, stderr string, seeded, fresh bool) {
		t.Helper()
		if len(got) != 2 {
			t.Fatalf("%s: %d lines", what, len(got))
		}
		for _, l := range got {
			if l.Seeded != seeded || (!fresh && l.Cost != 0) || len(l.Recommendations) != 5 {
				t.Fatalf("%s: %+v (want seeded=%v, fresh=%v)", what, l, seeded, fresh)
			}
		}
		want := "0 fresh lists charged (0 eps in all), 2 re-served"
		if fresh {
			want = "2 fresh lists charged"
		}
		if !strings.Contains(stderr, want) {
			t.Fatalf("%s: summary %q, want %q", what, stderr, want)
		}
	}

	seeded1, stderr := rec("--seed", "1", "--format", "jsonl")
	check("seeded run", seeded1, stderr, true, true)
	// Negative control: the seeded lists are re-served to a seeded run.
	seeded2, stderr := rec("--seed", "1", "--format", "jsonl")
	check("seeded run again", seeded2, stderr, true, false)
	for i := range seeded1 {
		if !slices.Equal(seeded1[i].Recommendations, seeded2[i].Recommendations) {
			t.Fatalf("seeded re-serve differs: %v vs %v", seeded1[i], seeded2[i])
		}
	}

	// Without --seed: fresh private lists, charged, never the seeded ones.
	priv1, stderr := rec("--format", "jsonl")
	check("private run", priv1, stderr, false, true)
	if strings.Contains(stderr, "all seeded") {
		t.Fatalf("private run summary: %s", stderr)
	}
	priv2, stderr := rec("--format", "jsonl")
	check("private run again", priv2, stderr, false, false)
	for i := range priv1 {
		if !slices.Equal(priv1[i].Recommendations, priv2[i].Recommendations) {
			t.Fatalf("private re-serve differs: %v vs %v", priv1[i], priv2[i])
		}
	}
	// A seeded run after the private lists still gets its seeded lists.
	seeded3, stderr := rec("--seed", "1", "--format", "jsonl")
	check("seeded run after private", seeded3, stderr, true, false)
	if !strings.Contains(stderr, "all seeded: NO privacy guarantee") {
		t.Fatalf("seeded run summary: %s", stderr)
	}
	for i := range seeded1 {
		if !slices.Equal(seeded1[i].Recommendations, seeded3[i].Recommendations) {
			t.Fatalf("seeded run got %v, want its list %v", seeded3[i], seeded1[i])
		}
	}

	// CSV: a seeded column on every row, true exactly for seeded lists.
	for _, c := range []struct {
		extra []string
		want  string
	}{{[]string{"--seed", "1"}, "true"}, {nil, "false"}} {
		out, _, err := run(t, append(slices.Clone(base), append(c.extra, "--format", "csv")...)...)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) != 11 || rows[0][len(rows[0])-1] != "seeded" {
			t.Fatalf("csv %v: %v %q", c.extra, err, out)
		}
		for _, r := range rows[1:] {
			if r[len(r)-1] != c.want {
				t.Fatalf("csv %v: row %v, want seeded=%s", c.extra, r, c.want)
			}
		}
	}

	// Table: a seeded run's header and lines say it, without a guarantee.
	out, _, err := run(t, append(slices.Clone(base), "--seed", "1")...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "NO privacy guarantee") || strings.HasPrefix(lines[0], "private") || len(lines) != 3 {
		t.Fatalf("seeded table: %q", lines)
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, "[seeded, not for deployment]") {
			t.Fatalf("seeded table line without the tag: %q", l)
		}
	}
	out, _, err = run(t, base...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "private top-5") || strings.Contains(out, "seeded,") {
		t.Fatalf("private table: %q", out)
	}

	// The ledger holds both: 2 users x (1 seeded + 1 private) releases.
	st, err := ledger.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	users, err := st.Users(context.Background())
	if err != nil || len(users) != 2 {
		t.Fatalf("ledger users %+v %v", users, err)
	}
	for _, u := range users {
		if u.Releases != 2 || u.Seeded != 1 {
			t.Fatalf("ledger user %+v, want 2 releases, 1 seeded", u)
		}
	}
}

// smallModel writes a 200-node latent graph, three marks and a CN dplp
// model trained on them into a temporary directory, and returns their paths.
func smallModel(t *testing.T) (dir, g, prot, mp string) {
	t.Helper()
	dir = t.TempDir()
	g = filepath.Join(dir, "g.txt")
	if _, _, err := run(t, "gen", "latent", "--n", "200", "--mean-degree", "10", "--out", g); err != nil {
		t.Fatal(err)
	}
	prot = filepath.Join(dir, "prot.txt")
	if err := os.WriteFile(prot, []byte("0 1\n2 3\n7 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mp = filepath.Join(dir, "m.json")
	if _, stderr, err := run(t, "train", "--graph", g, "--protected", prot, "--score", "cn", "--variant", "dplp", "--eps", "0.5", "--epochs", "2", "--out", mp); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	return dir, g, prot, mp
}
