package pipeline

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
)

// The pipeline's data fingerprint equals protect.Fingerprint of the same
// inputs read on one machine (graph.ReadFile + graph.WithNodes +
// protect.ReadFile, what recommend compares with the model's meta.data):
// with marks (some on non-edges) and a node list, without marks, with tiny
// shards. A model that records no fingerprint gets no fingerprint stage.
func TestDataFingerprint(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(61, 62))
	edges, marks := mixedGraph(rng, 90, 300)
	gp, mp, np := filepath.Join(dir, "g"), filepath.Join(dir, "m"), filepath.Join(dir, "nodes")
	for p, c := range map[string]string{gp: edges, mp: marks, np: "# declared\niso-1\nuser-1\n4242\n"} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := ShardBytes
	ShardBytes = 600
	defer func() { ShardBytes = old }()
	// A per-pick model and a dplp-list model, both recording other data.
	pm, err := model.Load(writeModel(t, dir, "aa", 1))
	if err != nil {
		t.Fatal(err)
	}
	pm.Meta.Data = "v1:trained-elsewhere"
	pp := filepath.Join(dir, "pm.json")
	if err := model.Save(pp, pm); err != nil {
		t.Fatal(err)
	}
	lp := writeListModel(t, dir, "cn", privunit.Pair, "cn", 1, posterior, "v1:trained-elsewhere")
	ctx := context.Background()
	for i, c := range []struct {
		model, marks, nodes string
	}{
		{pp, mp, np},
		{lp, mp, ""},
		{pp, "", ""},
	} {
		mb, err := os.ReadFile(c.model)
		if err != nil {
			t.Fatal(err)
		}
		fp := filepath.Join(dir, "fp")
		os.Remove(fp)
		p, s := beam.NewPipelineWithRoot()
		info, err := Build(s, Config{Graph: gp, Protected: c.marks, Nodes: c.nodes, Model: mb, K: 3, Seed: seedp(1), Out: filepath.Join(dir, "o"), RunID: "t", DataFingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		if !info.Fingerprinted || info.ModelData != "v1:trained-elsewhere" {
			t.Fatalf("case %d: fingerprinted %v, model data %q", i, info.Fingerprinted, info.ModelData)
		}
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFingerprint(ctx, fp)
		if err != nil {
			t.Fatal(err)
		}
		g, pr := loadRef(t, gp, c.marks, c.nodes)
		if want := protect.Fingerprint(g, pr); got != want {
			t.Errorf("case %d: beam %s, single machine %s", i, got, want)
		}
	}
	// No meta.data: nothing to compare, no stage, no file.
	mb, err := os.ReadFile(writeModel(t, dir, "cn", 1))
	if err != nil {
		t.Fatal(err)
	}
	fp := filepath.Join(dir, "fp-none")
	_, s := beam.NewPipelineWithRoot()
	info, err := Build(s, Config{Graph: gp, Protected: mp, Model: mb, K: 3, Seed: seedp(1), Out: filepath.Join(dir, "o"), RunID: "t", DataFingerprint: fp})
	if err != nil || info.Fingerprinted {
		t.Fatalf("model without meta.data: fingerprinted %v, %v", info.Fingerprinted, err)
	}
}
