package pipeline

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

func init() { beam.RegisterType(reflect.TypeOf(dumpFn{})) }

func dumpInput(label string, in *release.UserInput) string {
	idx := make([]int, len(in.Cands))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(in.Cands[a], in.Cands[b]) })
	var b strings.Builder
	fmt.Fprintf(&b, "%s N=%d zero=%d dS=%v sMax=%v:", label, in.N, in.Zero, in.DeltaS, in.SMax)
	for _, i := range idx {
		fmt.Fprintf(&b, " %d:%v/%v", in.Cands[i], in.S[i], in.Pub[i])
	}
	return b.String()
}

type dumpFn struct{ Kind int }

func (f *dumpFn) ProcessElement(u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, n int, emit func(Final)) error {
	nd, in, _, err := assemble(score.Kind(f.Kind), u, nodes, cands, sens, n, nil)
	if err != nil {
		return err
	}
	emit(Final{U: u, Line: dumpInput(nd.Label, in)})
	return nil
}

// compareInputs compares each user's assembled input with score.Worker's.
func compareInputs(t *testing.T, gp, mp string, kind score.Kind, chunk int) {
	dir := t.TempDir()
	out := filepath.Join(dir, "dump")
	p, s := beam.NewPipelineWithRoot()
	edgeLines := ReadPairs(s.Scope("Edges"), gp)
	markLines := ReadPairs(s.Scope("Marks"), mp)
	ids := NodeIDs(s, Labels(s.Scope("Edges"), edgeLines), Labels(s.Scope("Marks"), markLines))
	n := stats.CountElms(s, ids)
	edges := Resolve(s.Scope("Edges"), gp, false, ids, edgeLines)
	marks := Resolve(s.Scope("Marks"), mp, true, ids, markLines)
	idLabels := beam.ParDo(s, swapLabel, ids)
	nodes := Nodes(s, idLabels, edges, marks)
	scored := nodes
	if kind == score.JC {
		scored = WithNeighbourDegrees(s, nodes)
	}
	cands := Candidates(s, kind, chunk, scored)
	sens := Sensitivities(s, chunk, false, nodes)
	j := beam.CoGroupByKey(s, beam.ParDo(s, keyNode, nodes), cands, sens)
	Write(s, out, "", 1, n, beam.ParDo(s, &dumpFn{Kind: int(kind)}, j, beam.SideInput{Input: n}))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	g, pr := loadRef(t, gp, mp, "")
	sc, err := score.New(g, pr, kind)
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	var r score.Result
	got := readLines(t, out)
	bad := 0
	for u := range g.N() {
		w.Score(int32(u), &r)
		in := &release.UserInput{N: g.N(), Cands: r.Cands, S: r.S, Pub: r.Pub, Zero: r.Zero, DeltaS: r.DeltaS, SMax: r.SMax}
		want := dumpInput(g.Label(int32(u)), in)
		if u >= len(got) || got[u] != want {
			if bad < 3 {
				g := ""
				if u < len(got) {
					g = got[u]
				}
				t.Errorf("user %d:\n beam   %.400s\n single %.400s", u, g, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d users differ", bad)
	}
	os.Remove(out)
}
