package deploy

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/traintest"
	"github.com/dplp/dplp/transform"
)

func trainedResult(t *testing.T, v train.Variant) *train.Result {
	res := traintest.Result(t, v)
	res.Config.OnEpoch = func(train.Progress) {} // Compile must not record it
	return res
}

// TestCompile: the model's table is the result's compiled table, normalised
// to f(0) = 0, f(1) = 1 (as model.New computed it), and the metadata
// records the run.
func TestCompile(t *testing.T) {
	for _, v := range train.Variants() {
		res := trainedResult(t, v)
		seed := uint64(7)
		m, err := Compile(res, model.Info{Score: "aa", Dataset: "synthetic", Seed: &seed, Grid: 301})
		if err != nil {
			t.Fatal(err)
		}
		ft, _, err := res.Tables(301)
		if err != nil {
			t.Fatal(err)
		}
		fv := ft.Values()
		R, f0 := fv[len(fv)-1]-fv[0], fv[0]
		for i := range fv {
			if R > 0 {
				fv[i] = (fv[i] - f0) / R
			}
		}
		if !reflect.DeepEqual(m.F, fv) || m.Grid != 301 {
			t.Errorf("%s: table differs from the result's normalised table", v)
		}
		if m.Variant != model.Variant(v) || m.EpsP != 0.5 || m.Lexicographic() != v.Public() {
			t.Errorf("%s: variant %s eps %v lex %v", v, m.Variant, m.EpsP, m.Lexicographic())
		}
		var cfg train.Config
		if err := json.Unmarshal(m.Meta.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		want := res.Config
		want.OnEpoch = nil
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("%s: recorded config %+v, want %+v", v, cfg, want)
		}
		me := m.Meta
		if me.Epochs != res.History[len(res.History)-1].Epoch || me.BestEpoch != res.BestEpoch || me.TrainQueries != res.TrainQueries ||
			me.SkippedQueries != res.SkippedQueries || me.EarlyStopped != res.EarlyStopped || me.HeldOutAUC == nil ||
			*me.HeldOutAUC != res.BestAUC || *me.Seed != 7 || me.Dataset != "synthetic" {
			t.Errorf("%s: metadata %+v", v, me)
		}
	}
	res := trainedResult(t, train.Lin)
	if m, err := Compile(res, model.Info{}); err != nil || m.Grid != transform.DefaultGrid {
		t.Errorf("default grid: %v, %v", m, err)
	}
	res.BestAUC = math.NaN()
	if m, err := Compile(res, model.Info{}); err != nil || m.Meta.HeldOutAUC != nil {
		t.Errorf("no held-out AUC: %v, %v", m, err)
	}
}

// TestCompileRejects: model.New's rejections, in its order.
func TestCompileRejects(t *testing.T) {
	res := trainedResult(t, train.Lin)
	check := func(name string, r *train.Result, info model.Info, want string) {
		t.Helper()
		if m, err := Compile(r, info); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, %v; want an error with %q", name, m, err, want)
		}
	}
	check("nil result", nil, model.Info{}, "no trained transform")
	check("no transform", &train.Result{}, model.Info{}, "no trained transform")
	bad := *res
	bad.Config.Eps = math.Inf(1)
	check("infinite eps", &bad, model.Info{}, "cannot be stored")
	check("infinite eps, grid 1", &bad, model.Info{Grid: 1}, "cannot be stored")
	bad = *res
	bad.H = res.F
	check("public transform", &bad, model.Info{}, "public transform h")
	check("public transform, grid 1", &bad, model.Info{Grid: 1}, "public transform h")
	check("grid 1", res, model.Info{Grid: 1}, "grid 1")
}
