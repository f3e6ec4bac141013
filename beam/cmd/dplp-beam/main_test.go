package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
)

// TestRefusedBeforeWork: bad flags and a non-regular --out are refused
// before the pipeline runs, and nothing is written beside --out.
func TestRefusedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	for _, c := range []struct {
		flags map[string]string
		want  string
	}{
		{map[string]string{"out": outDir}, "is not a regular file"},
		{map[string]string{"out": filepath.Join(dir, "o"), "hub-chunk": "0"}, "--hub-chunk must be >= 1"},
		{map[string]string{"out": filepath.Join(dir, "o"), "k": "0"}, "--k must be >= 1"},
		{map[string]string{"out": filepath.Join(dir, "o"), "seed": ""}, "needs --store"},
	} {
		base := map[string]string{"graph": "g.txt", "model": "m.json", "k": "5", "seed": "1", "hub-chunk": "2048", "store": ""}
		for k, v := range c.flags {
			base[k] = v
		}
		for k, v := range base {
			if err := flag.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		err := run(context.Background(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.flags, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files written beside --out: %v", entries)
	}
}

func TestMain(m *testing.M) { ptest.Main(m) }

// TestOtherDataNote: a seeded run of a model trained on other data prints
// recommend's notice on stderr (and removes the fingerprint file); a model
// trained on these data, or --data-check=false, prints none.
func TestOtherDataNote(t *testing.T) {
	dir := t.TempDir()
	gp, mp := filepath.Join(dir, "g.txt"), filepath.Join(dir, "p.txt")
	os.WriteFile(gp, []byte("a b\nb c\nc d\nd a\na e\ne f\nf b\n"), 0o644)
	os.WriteFile(mp, []byte("a b\nc e\n"), 0o644)
	g, _, err := graph.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := protect.ReadFile(mp, g)
	if err != nil {
		t.Fatal(err)
	}
	writeModel := func(name, data string) string {
		m, err := model.CompileList("cn", privunit.Pair, model.ListSpec{Eps: 1, Evidence: "cn", Combine: list.Combine{W: 1, Post: true, Rho: 0.2, A: 0.3}, FitK: 10, PubScale: 1, EvScale: 1}, model.Info{Score: "cn"})
		if err != nil {
			t.Fatal(err)
		}
		m.Meta.Data = data
		p := filepath.Join(dir, name)
		if err := model.Save(p, m); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := writeModel("other.json", "v1:0000")
	same := writeModel("same.json", protect.Fingerprint(g, marks))
	for i, c := range []struct {
		model, check string
		note         bool
	}{
		{other, "true", true},
		{same, "true", false},
		{other, "false", false},
	} {
		out := filepath.Join(dir, fmt.Sprintf("out%d.jsonl", i))
		for k, v := range map[string]string{"graph": gp, "protected": mp, "nodes": "", "model": c.model, "k": "3", "seed": "5", "out": out,
			"charges": "-", "run-id": "", "store": "", "out-shards": "1", "hub-chunk": "2048", "data-check": c.check} {
			if err := flag.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		var stderr bytes.Buffer
		if err := run(context.Background(), &stderr); err != nil {
			t.Fatal(err)
		}
		note := model.OtherDataNote(c.model)
		if got := strings.Contains(stderr.String(), note+"\n"); got != c.note {
			t.Errorf("%s, --data-check=%s: note printed %v, want %v; stderr:\n%s", c.model, c.check, got, c.note, stderr.String())
		}
		if !strings.Contains(stderr.String(), "dplp-list (evidence cn") {
			t.Errorf("the header does not name the dplp-list model: %s", stderr.String())
		}
		if _, err := os.Stat(out + ".data-fingerprint"); !os.IsNotExist(err) {
			t.Errorf("the fingerprint file was left behind (%v)", err)
		}
		if lines, err := os.ReadFile(out); err != nil || !strings.Contains(string(lines), `"unit":"pair","eps_list":1}`) {
			t.Errorf("lists: %v %s", err, lines)
		}
	}
}
