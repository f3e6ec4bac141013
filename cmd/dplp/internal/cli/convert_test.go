package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConvertSnapshotEverywhere(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "g.txt")
	if _, _, err := run(t, "gen", "ba", "--n", "300", "--m", "3", "--seed", "4", "--out", txt); err != nil {
		t.Fatal(err)
	}
	// Repeated lines and a self-loop, so the build statistics matter.
	b, _ := os.ReadFile(txt)
	os.WriteFile(txt, append(b, "0 1\n1 0\n5 5\n"...), 0o644)
	snap := filepath.Join(dir, "g.dplpg")
	_, stderr, err := run(t, "convert", "--graph", txt, "--out", snap)
	if err != nil || !strings.Contains(stderr, "wrote "+snap) || !strings.Contains(stderr, "no protection marks") {
		t.Fatalf("convert: %v %s", err, stderr)
	}
	want, _, err := run(t, "stats", "--graph", txt, "--json")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := run(t, "stats", "--graph", snap, "--json")
	if err != nil || got != want {
		t.Fatalf("stats of the snapshot %s (%v), of the text %s", got, err, want)
	}
	// Detected by magic bytes, not by name.
	odd := filepath.Join(dir, "snapshot.txt")
	data, _ := os.ReadFile(snap)
	os.WriteFile(odd, data, 0o644)
	if got, _, err := run(t, "stats", "--graph", odd, "--json"); err != nil || got != want {
		t.Fatalf("snapshot named .txt: %s %v", got, err)
	}

	// Marks stored by convert are used when no --protected/--sigma is given,
	// and equal the synthetic marks they were made from.
	marked := filepath.Join(dir, "marked.dplpg")
	if _, stderr, err := run(t, "convert", "--graph", txt, "--sigma", "0.3", "--protect-seed", "7", "--out", marked); err != nil || !strings.Contains(stderr, "protected pairs") {
		t.Fatalf("convert --sigma: %v %s", err, stderr)
	}
	scoreArgs := []string{"score", "--score", "aa", "--all", "--top", "3"}
	fromText, _, err := run(t, append(scoreArgs, "--graph", txt, "--sigma", "0.3", "--seed", "7")...)
	if err != nil {
		t.Fatal(err)
	}
	fromSnap, _, err := run(t, append(scoreArgs, "--graph", marked)...)
	if err != nil || fromSnap != fromText {
		t.Fatalf("score on the snapshot differs from score with the same marks (%v)", err)
	}
	unmarked, _, err := run(t, append(scoreArgs, "--graph", snap)...)
	if err != nil || unmarked == fromText {
		t.Fatalf("score without marks equals score with marks (%v)", err)
	}
	// Explicit marks override stored ones; a snapshot can be converted again.
	prot := writeTemp(t, "p.txt", "0 1\n2 3\n")
	if _, _, err := run(t, append(scoreArgs, "--graph", marked, "--protected", prot)...); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.dplpg")
	if _, stderr, err := run(t, "convert", "--graph", marked, "--out", again); err != nil || !strings.Contains(stderr, "protected pairs") {
		t.Fatalf("re-convert: %v %s", err, stderr)
	}
	if _, stderr, err := run(t, "convert", "--graph", txt, "--protected", prot, "--out", again); err != nil || !strings.Contains(stderr, "2 protected pairs") {
		t.Fatalf("convert --protected: %v %s", err, stderr)
	}
	if fromAgain, _, err := run(t, append(scoreArgs, "--graph", again, "--protected", prot)...); err != nil {
		t.Fatal(err)
	} else if stored, _, _ := run(t, append(scoreArgs, "--graph", again)...); stored != fromAgain {
		t.Fatal("stored --protected marks differ from the file's")
	}

	// Corrupted and truncated snapshots are errors naming the file.
	bad := filepath.Join(dir, "bad.dplpg")
	data[len(data)/2] ^= 0x40
	os.WriteFile(bad, data, 0o644)
	if _, _, err := run(t, "stats", "--graph", bad); err == nil || !strings.Contains(err.Error(), bad+": corrupted snapshot") {
		t.Fatalf("corrupted: %v", err)
	}
	os.WriteFile(bad, data[:100], 0o644)
	if _, _, err := run(t, "stats", "--graph", bad); err == nil || !strings.Contains(err.Error(), bad+": truncated snapshot") {
		t.Fatalf("truncated: %v", err)
	}
}

func TestConvertFlags(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\n")
	out := filepath.Join(t.TempDir(), "g.dplpg")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", "--graph", g}, "--out FILE is required"},
		{[]string{"convert", "--out", out}, "--graph FILE is required"},
		{[]string{"convert", "--graph", g, "--out", g}, "--out must differ"},
		{[]string{"convert", "--graph", g, "--out", filepath.Dir(out)}, "not a regular file"},
		{[]string{"convert", "--graph", g, "--out", out, "--sigma", "NaN"}, "--sigma must be in [0,1], got NaN"},
		{[]string{"convert", "--graph", g, "--out", out, "--sigma", "Inf"}, "--sigma must be in [0,1], got +Inf"},
		{[]string{"convert", "--graph", g, "--out", out, "--sigma", "0.5", "--protect-nonedges", "nan"}, "--protect-nonedges must be in [0,1], got NaN"},
		{[]string{"convert", "--graph", g, "--out", out, "--protect-nonedges", "0.1"}, "--protect-nonedges requires --sigma"},
		{[]string{"convert", "--graph", g, "--out", out, "--sigma", "0.5", "--protected", g}, "either --protected or --sigma"},
	} {
		if _, _, err := run(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a failed convert wrote its output")
	}
}

// --sigma NaN used to mean "not given" (the flag's default was NaN).
func TestSigmaNaNIsAnError(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\nc a\n")
	for _, v := range []string{"NaN", "nan", "Inf", "-Inf"} {
		for _, cmd := range [][]string{
			{"score", "--graph", g, "--score", "cn", "--all", "--sigma", v},
			{"train", "--graph", g, "--score", "cn", "--variant", "lin", "--eps", "1", "--out", filepath.Join(t.TempDir(), "m.json"), "--sigma", v},
		} {
			if _, _, err := run(t, cmd...); err == nil || !strings.Contains(err.Error(), "--sigma must be in [0,1]") {
				t.Errorf("%v: err %v", cmd, err)
			}
		}
	}
	for _, cmd := range []string{"score", "train", "recommend", "convert"} {
		out, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "NaN") {
			t.Errorf("%s --help shows NaN:\n%s", cmd, out)
		}
	}
}
