package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/train"
	"github.com/dplp/dplp/train/traintest"
	"github.com/dplp/dplp/transform"
)

func trained(t *testing.T, v train.Variant) *train.Result { return traintest.Result(t, v) }

// fitOf is what train/deploy's Compile makes of a training result (that
// package imports this one, so the tests redo the conversion).
func fitOf(t *testing.T, res *train.Result, grid int) Fit {
	t.Helper()
	ft, _, err := res.Tables(grid)
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config
	cfg.OnEpoch = nil
	conf, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fit := Fit{Variant: Variant(res.Config.Variant), EpsP: res.Config.Eps, F: ft.Values(), Config: conf,
		BestEpoch: res.BestEpoch, HeldOutAUC: res.BestAUC, EarlyStopped: res.EarlyStopped,
		TrainQueries: res.TrainQueries, SkippedQueries: res.SkippedQueries}
	if n := len(res.History); n > 0 {
		fit.Epochs = res.History[n-1].Epoch
	}
	return fit
}

func newModel(t *testing.T, v train.Variant) *Model {
	t.Helper()
	seed := uint64(42)
	m, err := Compile(fitOf(t, trained(t, v), 201), Info{Score: "aa", Dataset: "synthetic <test>", Seed: &seed, Grid: 201,
		Created: time.Date(2024, 5, 6, 7, 8, 9, 123, time.FixedZone("x", 3600))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	for _, v := range train.Variants() {
		m := newModel(t, v)
		path := filepath.Join(t.TempDir(), "m.json")
		if err := Save(path, m); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) || !reflect.DeepEqual(m.F, got.F) || !reflect.DeepEqual(m.Meta.Config, got.Meta.Config) {
			t.Errorf("%s: round trip differs:\n%s\n%s", v, a, b)
		}
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 200; i++ {
			s, sp, sMax, ds := 12*r.Float64(), 12*r.Float64(), 10*r.Float64(), r.Float64()
			if m.Utility(s, sp, sMax) != got.Utility(s, sp, sMax) || m.Delta(ds, sMax) != got.Delta(ds, sMax) {
				t.Fatalf("%s: loaded model evaluates differently", v)
			}
		}
		if got.Meta.Seed == nil || *got.Meta.Seed != 42 || got.Meta.Dataset != "synthetic <test>" ||
			got.Meta.Created.Location() != time.UTC || got.Meta.HeldOutAUC == nil {
			t.Errorf("%s: metadata %+v", v, got.Meta)
		}
		var cfg train.Config
		if err := json.Unmarshal(got.Meta.Config, &cfg); err != nil || cfg.Variant != v || cfg.Epochs != 2 || !reflect.DeepEqual(cfg.Hidden, []int{5}) {
			t.Errorf("%s: recorded config %s (%v)", v, got.Meta.Config, err)
		}
		if got.Variant != Variant(v) || got.Public() != v.Public() || got.Variant.Lexicographic() != v.Public() {
			t.Errorf("%s: Public %v", v, got.Public())
		}
	}
}

func TestTamperedFileRejected(t *testing.T) {
	m := newModel(t, train.DPLP)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	if err := Save(path, m); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)

	// Change one table value (keep the table monotone and the JSON valid).
	var env map[string]json.RawMessage
	_ = json.Unmarshal(data, &env)
	var body map[string]any
	_ = json.Unmarshal(env["model"], &body)
	f := body["f"].([]any)
	f[100] = f[100].(float64) + 1e-12
	env["model"], _ = json.Marshal(body)
	tampered, _ := json.Marshal(env)
	check := func(name string, b []byte, want error) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if !errors.Is(err, want) {
			t.Errorf("%s: error %v, want %v", name, err, want)
		}
	}
	check("value.json", tampered, ErrChecksum)
	check("dataset.json", bytes.Replace(data, []byte("synthetic"), []byte("synthetik"), 1), ErrChecksum)
	check("eps.json", bytes.Replace(data, []byte(`"eps_p": 0.5`), []byte(`"eps_p": 5`), 1), ErrChecksum)
	check("truncated.json", data[:len(data)/2], ErrMalformed)
	check("garbage.json", []byte("not json"), ErrMalformed)
	check("noversion.json", []byte(`{"model": {}, "sha256": "00"}`), ErrMalformed)
	check("extra.json", bytes.Replace(data, []byte(`"score"`), []byte(`"extra": 1, "score"`), 1), ErrMalformed)
	check("trailing.json", append(append([]byte{}, data...), []byte("{}")...), ErrMalformed)

	// Re-indenting does not change the content: still loads.
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "compact.json")
	_ = os.WriteFile(p, compact.Bytes(), 0o644)
	if _, err := Load(p); err != nil {
		t.Errorf("compacted file rejected: %v", err)
	}
}

func TestWrongVersionRejected(t *testing.T) {
	m := newModel(t, train.Lin)
	path := filepath.Join(t.TempDir(), "m.json")
	if err := Save(path, m); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	bad := bytes.Replace(data, []byte(`"format_version": 1`), []byte(`"format_version": 2`), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("version field not found")
	}
	_ = os.WriteFile(path, bad, 0o644)
	_, err := Load(path)
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("error %v, want ErrVersion", err)
	}
}

// A file with a valid checksum but a decreasing table is still rejected.
func TestInvalidContentRejected(t *testing.T) {
	m := newModel(t, train.Lin)
	m.F[5], m.F[6] = m.F[6], m.F[5]-1
	sum, body, err := checksum(m)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(envelope{FormatVersion: FormatVersion, Model: body, SHA256: sum})
	path := filepath.Join(t.TempDir(), "m.json")
	_ = os.WriteFile(path, out, 0o644)
	if _, err := Load(path); !errors.Is(err, ErrMalformed) {
		t.Errorf("error %v, want ErrMalformed", err)
	}
	if err := Save(path, m); err == nil {
		t.Error("Save accepted a decreasing table")
	}
}

func TestUtilityAndDelta(t *testing.T) {
	res := trained(t, train.DPLPPub)
	m, err := Compile(fitOf(t, res, 301), Info{Score: "cn", Grid: 301})
	if err != nil {
		t.Fatal(err)
	}
	if m.F[0] != 0 || math.Abs(m.F[300]-1) > 1e-15 || m.H != nil || !m.Lexicographic() {
		t.Errorf("tables not normalised or h present: f(0)=%v f(1)=%v h %v lex %v", m.F[0], m.F[300], m.H, m.Lexicographic())
	}
	f, h := m.Tables()
	if h != nil {
		t.Error("a public table h")
	}
	rf, _, _ := res.Tables(301)
	// Normalisation leaves utility/Delta unchanged; s_pub is not part of the
	// utility (dplp-pub ranks by it exactly).
	for _, c := range []struct{ s, sp, sMax, ds float64 }{{3, 4, 10, 1}, {0, 9, 10, 0.5}, {10, 0, 10, 3}} {
		got := m.Utility(c.s, c.sp, c.sMax) / m.Delta(c.ds, c.sMax)
		want := (rf.Eval(c.s/c.sMax) - rf.Eval(0)) / rf.Delta(c.ds/c.sMax)
		if math.Abs(got-want) > 1e-9*math.Abs(want)+1e-12 {
			t.Errorf("%+v: utility/Delta %v, raw tables give %v", c, got, want)
		}
		if u := m.Utility(c.s, c.sp, c.sMax); u != f.Eval(c.s/c.sMax) {
			t.Errorf("utility %v is not f", u)
		}
	}
	if m.Delta(0, 10) != 0 {
		t.Error("Delta(0) must be exactly 0")
	}
	for _, ds := range []float64{-1, math.NaN()} {
		if !math.IsInf(m.Delta(ds, 10), 1) {
			t.Errorf("Delta(%v) not +Inf", ds)
		}
	}
	if got := m.Delta(1, 0); math.Abs(got-1) > 1e-9 {
		t.Errorf("Delta with sMax=0: %v, want f(1)-f(0) = 1", got)
	}
	if m.Delta(0.5, 10) != f.Delta(0.05) {
		t.Error("Delta must use f's table only")
	}
	if m.Utility(20, 0, 10) != m.Utility(10, 0, 10) || m.Utility(-1, 0, 10) != m.Utility(0, 0, 10) {
		t.Error("scores outside [0, sMax] not clamped")
	}
	if m.Utility(0, 0, 0) != f.Eval(0) {
		t.Error("sMax = 0 must map to x = 0")
	}
	// The batch path gives Utility's values bit for bit, in idx's order,
	// for every sMax (0 and NaN take the per-item path).
	scores := []float64{0, 3, 9.99, 10, 11, -1, 2.5e-9, math.NaN()}
	idx := []int{7, 0, 3, 3, 1, 6, 2, 5, 4}
	for _, sMax := range []float64{10, 0.7, 0, math.NaN()} {
		got := m.AppendUtilities(nil, scores, idx, sMax)
		for k, i := range idx {
			want := m.Utility(scores[i], 0, sMax)
			if math.Float64bits(got[k]) != math.Float64bits(want) && !(math.IsNaN(got[k]) && math.IsNaN(want)) {
				t.Errorf("sMax %v: AppendUtilities[%d] = %v, Utility %v", sMax, k, got[k], want)
			}
		}
	}
}

func TestCompileRejects(t *testing.T) {
	good := fitOf(t, trained(t, train.Lin), transform.DefaultGrid)
	orig := slices.Clone(good.F)
	m, err := Compile(good, Info{})
	if err != nil || m.Grid != transform.DefaultGrid || len(m.F) != transform.DefaultGrid {
		t.Fatalf("default grid: %v %v", m, err)
	}
	if !slices.Equal(good.F, orig) {
		t.Error("Compile modified fit.F")
	}
	if m.Meta.Epochs != good.Epochs || m.Meta.TrainQueries != good.TrainQueries || m.Meta.HeldOutAUC == nil || *m.Meta.HeldOutAUC != good.HeldOutAUC {
		t.Errorf("metadata %+v from %+v", m.Meta, good)
	}
	noAUC := good
	noAUC.HeldOutAUC = math.NaN()
	if m, err := Compile(noAUC, Info{}); err != nil || m.Meta.HeldOutAUC != nil {
		t.Errorf("NaN held-out AUC: %v, %v", m, err)
	}
	for _, c := range []struct {
		name string
		edit func(*Fit, *Info)
		want string
	}{
		{"no table", func(f *Fit, _ *Info) { f.F = nil }, "no trained transform"},
		{"infinite eps", func(f *Fit, _ *Info) { f.EpsP = math.Inf(1) }, "cannot be stored"},
		{"NaN eps", func(f *Fit, _ *Info) { f.EpsP = math.NaN() }, "cannot be stored"},
		{"zero eps", func(f *Fit, _ *Info) { f.EpsP = 0 }, "cannot be stored"},
		{"public table", func(f *Fit, _ *Info) { f.H = f.F }, "public transform h"},
		{"public table first", func(f *Fit, _ *Info) { f.H, f.EpsP, f.F = []float64{}, -1, nil }, "public transform h"},
		{"grid 1", func(f *Fit, _ *Info) { f.F = f.F[:1] }, "grid 1"},
		{"grid mismatch", func(_ *Fit, i *Info) { i.Grid = 7 }, "grid 7"},
		{"decreasing", func(f *Fit, _ *Info) { f.F = []float64{0, 2, 1} }, "model: f:"},
		{"NaN value", func(f *Fit, _ *Info) { f.F = []float64{0, math.NaN(), 1} }, "model: f:"},
		{"unknown variant", func(f *Fit, _ *Info) { f.Variant = "dplp-x" }, "unknown variant"},
		{"alias variant", func(f *Fit, _ *Info) { f.Variant = "dplp-lin" }, "canonical"},
		{"bad config", func(f *Fit, _ *Info) { f.Config = json.RawMessage(`{"variant":`) }, "configuration"},
	} {
		fit, info := good, Info{}
		fit.F = slices.Clone(good.F)
		c.edit(&fit, &info)
		if m, err := Compile(fit, info); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want an error with %q", c.name, m, err, c.want)
		}
	}
}

func TestParseVariant(t *testing.T) {
	for in, want := range map[string]Variant{
		"dplp": VariantDPLP, "DPLP": VariantDPLP, " dplp\t": VariantDPLP,
		"lin": VariantLin, "dplp-lin": VariantLin, "DPLP-Lin": VariantLin,
		"umnn": VariantUMNN, "UMNN": VariantUMNN, "dplp-umnn": VariantUMNN,
		"dplp-pub": VariantDPLPPub, "DPLP-PUB ": VariantDPLPPub,
	} {
		if got, err := ParseVariant(in); err != nil || got != want {
			t.Errorf("ParseVariant(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "pub", "lin-dplp", "dplp_pub", "umnn-dplp", "dplp-"} {
		if got, err := ParseVariant(in); err == nil {
			t.Errorf("ParseVariant(%q) = %q, want an error", in, got)
		}
	}
	for _, v := range train.Variants() {
		if got, err := ParseVariant(string(v)); err != nil || string(got) != string(v) || got.Lexicographic() != v.Public() {
			t.Errorf("trainer variant %s: %q, %v", v, got, err)
		}
	}
}

// TestOldFileLoads: a file written when Metadata.Config was train.Config
// (testdata, from `dplp train ... --variant dplp --eps 0.5 --epochs 2`)
// loads unchanged: same checksum, hence same ID, and the configuration
// decodes as before.
func TestOldFileLoads(t *testing.T) {
	const path = "testdata/dplp-before-rawconfig.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Variant != VariantDPLP || m.EpsP != 0.5 || m.Grid != 1001 || m.Public() || m.F[0] != 0 || m.F[1000] != 1 {
		t.Errorf("loaded %s %v grid %d public %v", m.Variant, m.EpsP, m.Grid, m.Public())
	}
	if id, err := m.ID(); err != nil || id != "model:"+env.SHA256[:16] {
		t.Errorf("ID %q, %v; the file's checksum is %s", id, err, env.SHA256)
	}
	var cfg train.Config
	if err := json.Unmarshal(m.Meta.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Variant != train.DPLP || cfg.Eps != 0.5 || cfg.Epochs != 2 || cfg.AdamEps != 1e-8 || !reflect.DeepEqual(cfg.Hidden, []int{20}) {
		t.Errorf("config %+v", cfg)
	}
	if !json.Valid(m.Meta.Config) || bytes.ContainsAny(m.Meta.Config, " \n") {
		t.Errorf("config not compact: %s", m.Meta.Config)
	}
	// Saved again, it is the same content.
	out := filepath.Join(t.TempDir(), "m.json")
	if err := Save(out, m); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(out)
	var env2 envelope
	if err := json.Unmarshal(again, &env2); err != nil || env2.SHA256 != env.SHA256 {
		t.Errorf("re-saved checksum %s, want %s (%v)", env2.SHA256, env.SHA256, err)
	}
	if !bytes.Equal(again, data) {
		t.Error("re-saved file differs from the original")
	}

	// A hand-written file of the same era: the config object, indented and
	// with keys the current trainer does not know, is kept verbatim.
	hand := &Model{Score: "cn", Variant: VariantLin, EpsP: 1, Grid: 2, F: []float64{0, 1},
		Meta: Metadata{Config: json.RawMessage(`{ "variant": "lin", "eps_p": 1, "retired_option": [1, 2] }`)}}
	sum, body, err := checksum(hand)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.MarshalIndent(envelope{FormatVersion: FormatVersion, Model: body, SHA256: sum}, "", "  ")
	p := filepath.Join(t.TempDir(), "hand.json")
	_ = os.WriteFile(p, raw, 0o644)
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Meta.Config) != `{"variant":"lin","eps_p":1,"retired_option":[1,2]}` {
		t.Errorf("config %s", got.Meta.Config)
	}
}

// TestOldPublicModelRefused: a dplp-pub file with a public table h (the
// pre-lexicographic utility h(s_pub) + f(s)) is refused with a message
// saying how to retrain; the same file without h loads as a lexicographic
// model.
func TestOldPublicModelRefused(t *testing.T) {
	m := &Model{Score: "aa", Variant: VariantDPLPPub, EpsP: 0.5, Grid: 3, F: []float64{0, 0.25, 1}}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := Save(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || !got.Lexicographic() || !got.Public() {
		t.Fatalf("new-format dplp-pub model: %v, %v", got, err)
	}
	old := *m
	old.H = []float64{0, 0.5, 0.5}
	sum, body, err := checksum(&old)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(envelope{FormatVersion: FormatVersion, Model: body, SHA256: sum})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if !errors.Is(err, ErrOldPublic) || !strings.Contains(err.Error(), "retrain") {
		t.Fatalf("old dplp-pub model: error %v, want ErrOldPublic with retraining advice", err)
	}
}

// TestOtherDataNote pins the notice's text: recommend and the Beam pipeline
// print it word for word (their tests check that they print it).
func TestOtherDataNote(t *testing.T) {
	want := "note: m.json was trained on other data (its labels, public graph or marks differ from these); its transform still applies, but retrain it when the graph has changed much"
	if got := OtherDataNote("m.json"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestCompileListRefusesGaussian: a Gaussian dplp-list combination is
// rho-zCDP, not eps-DP, so no deployable model carries one; the same
// combination without Gauss compiles.
func TestCompileListRefusesGaussian(t *testing.T) {
	spec := ListSpec{Eps: 1, Evidence: "cn", FitK: 30, Combine: list.Combine{W: 1, Post: true, Rho: 0.5, A: 0.3}}
	if _, err := CompileList("cn", privunit.Pair, spec, Info{}); err != nil {
		t.Fatalf("Laplace combination: %v", err)
	}
	spec.Combine.Gauss = true
	if _, err := CompileList("cn", privunit.Pair, spec, Info{}); err == nil || !strings.Contains(err.Error(), "research") {
		t.Fatalf("Gaussian combination compiled (err %v)", err)
	}
}
