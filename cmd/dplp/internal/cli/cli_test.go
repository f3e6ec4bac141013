package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// run executes the CLI with args and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRoot(&out, &errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStatsJSONKeys(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\nc a\nc d 0.5\nd c\nd d\n")
	out, stderr, err := run(t, "stats", "--graph", g, "--json")
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
	want := []string{"duplicates_merged", "edges", "max_degree", "mean_degree", "nodes", "self_loops_dropped", "transitivity", "triangles"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v", keys)
	}
	if m["nodes"].(float64) != 4 || m["edges"].(float64) != 4 || m["triangles"].(float64) != 1 ||
		m["duplicates_merged"].(float64) != 1 || m["self_loops_dropped"].(float64) != 1 {
		t.Fatalf("values %v", m)
	}
	for _, note := range []string{"more than two columns", "self-loops dropped", "merged"} {
		if !strings.Contains(stderr, note) {
			t.Fatalf("stderr lacks %q: %s", note, stderr)
		}
	}
}

func TestFlagValidation(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\n")
	bad := writeTemp(t, "bad.txt", "a b\nc\n")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"stats"}, "--graph FILE is required"},
		{[]string{"stats", "--graph", bad}, "bad.txt:2: expected two node labels"},
		{[]string{"score", "--graph", g, "--score", "xx", "--all"}, "cn, aa, ra, jc, pa"},
		{[]string{"score", "--graph", g, "--score", "cn"}, "--query LABEL"},
		{[]string{"score", "--graph", g, "--score", "cn", "--query", "zz"}, "no such node"},
		{[]string{"score", "--graph", g, "--score", "cn", "--all", "--top", "0"}, "--top must be >= 1"},
		{[]string{"score", "--graph", g, "--score", "cn", "--all", "--sigma", "1.5"}, "--sigma must be in [0,1]"},
		{[]string{"score", "--graph", g, "--score", "cn", "--all", "--format", "xml"}, "csv or jsonl"},
		{[]string{"bench", "score", "--graph", g, "--score", "cn", "--queries", "-3"}, "--queries"},
		{[]string{"bench", "charge", "--users", "10"}, "--store is required"},
		{[]string{"bench", "charge", "--store", "sqlite:x.db", "--order", "sideways"}, "--order must be label, number or random"},
		{[]string{"bench", "host", "--mib", "0"}, "--mib must be >= 1"},
		{[]string{"bench", "host", "--syncs", "0"}, "--syncs must be >= 1"},
		{[]string{"bench", "host", "--mib", "1", "--syncs", "1", "--dir", filepath.Join(t.TempDir(), "absent")}, "absent"},
		{[]string{"gen", "ba", "--n", "1", "--out", filepath.Join(t.TempDir(), "x")}, "n"},
		{[]string{"gen", "nope", "--out", "x"}, "unknown model"},
	}
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}

func TestGenStatsScore(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"gen", "latent", "--n", "300", "--dim", "2", "--mean-degree", "8", "--seed", "3", "--out", filepath.Join(dir, "lat.txt.gz"), "--coords", filepath.Join(dir, "lat.xy")},
		{"gen", "ba", "--n", "300", "--m", "3", "--out", filepath.Join(dir, "ba.zst")},
		{"gen", "er", "--n", "300", "--p", "0.05", "--out", filepath.Join(dir, "er.txt")},
	} {
		if _, _, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	out, _, err := run(t, "stats", "--graph", filepath.Join(dir, "ba.zst"), "--json")
	if err != nil || !strings.Contains(out, `"edges":894`) {
		t.Fatalf("ba stats %s %v", out, err)
	}
	out, _, err = run(t, "score", "--graph", filepath.Join(dir, "lat.txt.gz"), "--score", "aa", "--all", "--top", "3", "--sigma", "0.3", "--seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "query,rank,candidate,s,s_pub,delta_s,s_max" || len(lines) < 10 {
		t.Fatalf("score output %q", out[:min(len(out), 300)])
	}
	out, _, err = run(t, "bench", "score", "--graph", filepath.Join(dir, "er.txt"), "--score", "cn", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["candidate_pairs"] <= 0 || m["queries"] != 300 || m["wedges"] <= 0 {
		t.Fatalf("bench output %s %v", out, err)
	}
	for _, k := range []string{"seconds", "pairs_per_second"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("bench output %s: no %q", out, k)
		}
	}
	out, _, err = run(t, "bench", "charge", "--store", "sqlite:"+filepath.Join(dir, "l.db"), "--users", "700", "--order", "random", "--influencers", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	if err := json.Unmarshal([]byte(out), &m); err != nil || len(m) != 3 || m["users"] != 700 || m["charges_per_second"] <= 0 {
		t.Fatalf("bench charge output %s %v", out, err)
	}
	out, _, err = run(t, "bench", "host", "--mib", "4", "--syncs", "5", "--dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	if err := json.Unmarshal([]byte(out), &m); err != nil || len(m) != 9 || m["bytes"] != 4<<20 || m["syncs"] != 5 {
		t.Fatalf("bench host output %s %v", out, err)
	}
	for _, k := range []string{"cpus", "first_touch_seconds", "first_touch_gb_per_second", "retouch_gb_per_second", "fsync_median_ms", "fsync_p99_ms", "syncs_per_second"} {
		if !(m[k] > 0) || m["fsync_p99_ms"] < m["fsync_median_ms"] {
			t.Fatalf("bench host output %s: %q not positive, or p99 below the median", out, k)
		}
	}
}

func TestScoreOutputMatchesDefinition(t *testing.T) {
	// a-b-c path plus c-d: CN(a,c) = 1 via b; AA(a,c) = 1/ln 2.
	g := writeTemp(t, "g.txt", "a b\nb c\nc d\n")
	out, _, err := run(t, "score", "--graph", g, "--score", "cn", "--query", "a", "--top", "5", "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var row struct {
		Query      string  `json:"query"`
		DeltaS     float64 `json:"delta_s"`
		SMax       float64 `json:"s_max"`
		Candidates int     `json:"candidates"`
		Top        []struct {
			Candidate string  `json:"candidate"`
			S         float64 `json:"s"`
		} `json:"top"`
	}
	if err := json.Unmarshal([]byte(out), &row); err != nil {
		t.Fatal(err)
	}
	if row.Query != "a" || row.Candidates != 2 || len(row.Top) != 2 || row.Top[0].Candidate != "c" || row.Top[0].S != 1 || row.Top[1].S != 0 || row.SMax != 1 {
		t.Fatalf("%+v", row)
	}
}

func TestAuditExitStatus(t *testing.T) {
	out, _, err := run(t, "audit", "--graphs", "2", "--score", "cn,aa", "--chi-samples", "2000", "--json")
	if err != nil {
		t.Fatalf("default audit failed: %v\n%s", err, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cases", "worst_log_ratio", "bound", "violations"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("audit JSON lacks %q", k)
		}
	}
	out, _, err = run(t, "audit", "--graphs", "2", "--score", "cn", "--chi-samples", "0", "--calibration", "reference")
	if ec, ok := err.(exitCode); !ok || ec != 1 || !strings.Contains(out, "does NOT meet") || !strings.Contains(out, "FAIL") {
		t.Fatalf("reference audit must exit 1 with a warning: err %v\n%s", err, out)
	}
}

func TestTrainRecommendDemo(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.txt")
	if _, _, err := run(t, "gen", "latent", "--n", "400", "--mean-degree", "12", "--out", g); err != nil {
		t.Fatal(err)
	}
	prot := filepath.Join(dir, "prot.txt")
	// Protect a few pairs, one of them a non-edge.
	if err := os.WriteFile(prot, []byte("0 1\n2 3\n5 399\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(dir, "m.json")
	out, stderr, err := run(t, "train", "--graph", g, "--protected", prot, "--score", "cn", "--variant", "dplp", "--eps", "0.5", "--epochs", "3", "--out", mp)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "held-out AUC") || !strings.Contains(stderr, "epoch   1") {
		t.Fatalf("train output %q %q", out, stderr)
	}
	store := "sqlite:" + filepath.Join(dir, "ledger.db")
	args := []string{"recommend", "--model", mp, "--graph", g, "--protected", prot, "--user", "0,7", "--k", "5", "--seed", "3", "--store", store, "--create"}
	out, stderr, err = run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "eps_p 0.5") || !strings.Contains(out, "NOT for deployment") || !strings.Contains(out, "K x eps_p = 2.5 per fresh list") {
		t.Fatalf("recommend header: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || len(strings.Fields(strings.SplitN(lines[1], ":", 2)[1])) != 5 || !strings.Contains(lines[1], "[seeded, not for deployment]") {
		t.Fatalf("recommend lists: %q", lines)
	}
	if !strings.Contains(stderr, "2 fresh lists charged") {
		t.Fatalf("recommend summary: %s", stderr)
	}
	// Asking again re-serves the same lists at no cost.
	out2, stderr2, err := run(t, args...)
	if err != nil || !strings.Contains(out2, "re-served, no cost") || !strings.Contains(stderr2, "0 fresh lists charged (0 eps in all), 2 re-served") {
		t.Fatalf("second run: %v\n%s\n%s", err, out2, stderr2)
	}
	list := func(line string) string { return strings.TrimSpace(strings.SplitN(line, ":", 2)[1]) }
	if list(strings.Split(out2, "\n")[1]) != list(strings.Split(out, "\n")[1]) {
		t.Fatalf("re-served list differs:\n%s\n%s", out, out2)
	}
	// Another K is another release, not the K = 5 list re-served.
	out3, _, err := run(t, "recommend", "--model", mp, "--graph", g, "--protected", prot, "--user", "0", "--k", "3", "--seed", "3", "--store", store)
	if err != nil || strings.Contains(out3, "re-served") || len(strings.Fields(list(strings.Split(out3, "\n")[1]))) != 3 {
		t.Fatalf("K = 3 after K = 5: %v\n%s", err, out3)
	}
	// The model records its predictor: a conflicting predictor flag is an error.
	if raw, _ := os.ReadFile(mp); !bytes.Contains(raw, []byte(`"predictor"`)) {
		t.Fatal("model file does not record its predictor")
	}
	if _, _, err := run(t, "recommend", "--model", mp, "--graph", g, "--protected", prot, "--user", "0", "--store", store, "--embed-seed", "9"); err == nil || !strings.Contains(err.Error(), "conflicts with the model") {
		t.Fatalf("conflicting predictor flag accepted: %v", err)
	}
	// Marks drawn from the private graph are refused for releases.
	if _, _, err := run(t, "recommend", "--model", mp, "--graph", g, "--sigma", "0.3", "--user", "0", "--store", store); err == nil || !strings.Contains(err.Error(), "simulation") {
		t.Fatalf("recommend --sigma accepted: %v", err)
	}
	// A corrupted model is refused.
	raw, _ := os.ReadFile(mp)
	os.WriteFile(mp, bytes.Replace(raw, []byte(`"eps_p": 0.5`), []byte(`"eps_p": 5`), 1), 0o644)
	if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("tampered model accepted: %v", err)
	}
	for _, bad := range [][]string{
		{"train", "--graph", g, "--protected", prot, "--score", "cn", "--eps", "0", "--out", mp},
		{"train", "--graph", g, "--score", "cn", "--eps", "1", "--out", mp},
		{"train", "--graph", g, "--protected", prot, "--score", "cn", "--eps", "1", "--variant", "big", "--out", mp},
		{"recommend", "--model", mp, "--graph", g, "--protected", prot, "--all", "--k", "0"},
	} {
		if _, _, err := run(t, bad...); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}

	out, _, err = run(t, "demo", "--n", "500", "--epochs", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var demo struct {
		Seconds float64 `json:"seconds"`
		Eps     float64 `json:"eps"`
		K       int     `json:"k"`
		Methods map[string]struct {
			AUC       *float64 `json:"auc_at_k"`
			Precision *float64 `json:"precision_at_k"`
		} `json:"methods"`
	}
	if err := json.Unmarshal([]byte(out), &demo); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nonprivate", "dplp", "dplp-lin", "exponential", "laplace", "staircase"} {
		m, ok := demo.Methods[name]
		if !ok || m.AUC == nil || m.Precision == nil {
			t.Fatalf("demo JSON lacks %s: %s", name, out)
		}
	}
	if demo.Eps != 0.1 || demo.K != 30 || demo.Seconds <= 0 {
		t.Fatalf("demo JSON header: %s", out)
	}
	if *demo.Methods["nonprivate"].AUC <= *demo.Methods["exponential"].AUC {
		t.Fatalf("non-private should beat the exponential mechanism: %s", out)
	}
}

func TestEvalLPAndEmbeddingScore(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.txt")
	if _, _, err := run(t, "gen", "latent", "--n", "300", "--mean-degree", "10", "--out", g); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "eval-lp", "--graph", g, "--score", "ra", "--seeds", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"roc_auc_mean", "roc_auc_ci95", "seconds"} {
		if _, ok := m[k].(float64); !ok {
			t.Fatalf("eval-lp JSON lacks %s: %s", k, out)
		}
	}
	out, _, err = run(t, "score", "--graph", g, "--score", "gcn", "--emb-epochs", "5", "--query", "0", "--top", "2", "--format", "jsonl")
	if err != nil || !strings.Contains(out, `"score":"gcn"`) || !strings.Contains(out, `"delta_s":1`) {
		t.Fatalf("gcn score: %v %s", err, out)
	}
	scores := writeTemp(t, "s.csv", "0,1,0.9\n0,2,2.5\n")
	if _, _, err := run(t, "score", "--graph", g, "--score", "file:"+scores, "--query", "0"); err == nil || !strings.Contains(err.Error(), "s.csv:2: score 2.5 outside") {
		t.Fatalf("out-of-range score file accepted: %v", err)
	}
	if _, _, err := run(t, "eval-lp", "--graph", g, "--score", "ra", "--holdout", "0"); err == nil {
		t.Fatal("holdout 0 accepted")
	}
}

func TestParseApproxCap(t *testing.T) {
	if r, err := parseApproxCap(""); err != nil || !math.IsInf(r, 1) {
		t.Fatalf("empty: %v %v", r, err)
	}
	r, err := parseApproxCap("3,1e-6")
	if err != nil || !(r > 0 && r < 3) {
		t.Fatalf("3,1e-6: rho %v, %v", r, err)
	}
	for _, bad := range []string{"3", "x,1e-6", "3,0", "3,1", "-1,1e-6", "nan,1e-6", "inf,0.1"} {
		if _, err := parseApproxCap(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestServeApproxBudgetFlag(t *testing.T) {
	o := &serveOptions{tokenFile: "x", logLevel: "info", grace: time.Second}
	o.cfg.KMax, o.cfg.UserBudget = 10, math.Inf(1)
	o.budgetApprox = "3,1e-6"
	if err := o.validate(); err != nil || !(o.cfg.UserRhoCap > 0 && o.cfg.UserRhoCap < 3) {
		t.Fatalf("3,1e-6: rho cap %v, %v", o.cfg.UserRhoCap, err)
	}
	o.budgetApprox = "3"
	if err := o.validate(); err == nil {
		t.Fatal("malformed --user-budget-approx accepted")
	}
}
