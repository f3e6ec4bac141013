package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dplp/dplp/accountant"
)

func runAccount(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRoot(&out, &errb)
	root.SetArgs(append([]string{"account"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestAccountJSON(t *testing.T) {
	out, err := runAccount(t, "--k", "30", "--eps-p", "0.1", "--lists", "10", "--delta", "1e-6", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(strings.Replace(out, `,"unit":"party"`, "", 1)), &m); err != nil {
		t.Fatal(err, out)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"approx_eps", "pure_eps", "zcdp_rho"}) || !strings.HasSuffix(out, `,"unit":"party"}`+"\n") {
		t.Fatalf("keys %v (and unit party): %s", keys, out)
	}
	want, _ := accountant.ZCDPToApprox(300*0.01/8, 1e-6)
	if m["pure_eps"] != 30 || math.Abs(m["zcdp_rho"]-0.375) > 1e-12 || m["approx_eps"] != want || !(want < 30) {
		t.Fatalf("%v", m)
	}
}

func TestAccountTarget(t *testing.T) {
	out, err := runAccount(t, "--k", "30", "--lists", "10", "--target-eps", "5", "--delta", "1e-6", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(strings.Replace(out, `,"unit":"party"`, "", 1)), &m); err != nil {
		t.Fatal(err, out)
	}
	if len(m) != 4 || m["eps_p"] < 5.0/300 || m["approx_eps"] > 5 || m["approx_eps"] < 5*(1-1e-9) {
		t.Fatalf("%v", m)
	}
	want, _ := accountant.MaxEpsPerPick(5, 1e-6, 10, 30)
	if m["eps_p"] != want {
		t.Fatalf("eps_p %v want %v", m["eps_p"], want)
	}
	text, err := runAccount(t, "--k", "30", "--lists", "10", "--target-eps", "5")
	if err != nil || !strings.Contains(text, "eps_p") || !strings.Contains(text, "approx_eps") {
		t.Fatalf("%v %s", err, text)
	}
}

func TestAccountText(t *testing.T) {
	out, err := runAccount(t, "--k", "3", "--eps-p", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pure_eps    1.5", "zcdp_rho", "approx_eps", "unit        party  (Definition 1"} {
		if !strings.Contains(out, s) {
			t.Fatalf("missing %q in %s", s, out)
		}
	}
}

func TestAccountFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--k", "0", "--eps-p", "1"}, "--k must be >= 1"},
		{[]string{"--lists", "0", "--eps-p", "1"}, "--lists must be >= 1"},
		{[]string{"--eps-p", "1", "--delta", "0"}, "--delta must be in (0,1)"},
		{[]string{"--eps-p", "1", "--delta", "nan"}, "--delta must be in (0,1)"},
		{[]string{"--eps-p", "nan"}, "--eps-p"},
		{[]string{}, "--eps-p E"},
		{[]string{"--eps-p", "1", "--target-eps", "2"}, "not both"},
		{[]string{"--target-eps", "-1"}, "--target-eps must be a finite number > 0"},
		{[]string{"--eps-p", "1", "--unit", "edge"}, "--unit: want party or pair"},
		{[]string{"--eps-p", "1", "--mechanism", "laplace"}, "--mechanism: want exponential, dplp-list or dplp-list-gauss"},
		{[]string{"--eps", "1"}, "--eps is for --mechanism dplp-list or dplp-list-gauss; --mechanism exponential takes --eps-p"},
		{[]string{"--mechanism", "dplp-list", "--eps-p", "1"}, "--eps-p is for --mechanism exponential; --mechanism dplp-list takes --eps"},
		{[]string{"--mechanism", "dplp-list"}, "give --eps E (cost of a list)"},
		{[]string{"--mechanism", "dplp-list", "--eps", "1", "--target-eps", "2"}, "give either --eps or --target-eps"},
		{[]string{"--mechanism", "dplp-list", "--eps", "0"}, "--eps must be a number"},
	} {
		_, err := runAccount(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}

// TestAccountTargetOutOfRange: --target-eps never prints an eps_p that
// other commands refuse.
func TestAccountTargetOutOfRange(t *testing.T) {
	for _, args := range [][]string{{"--k", "1", "--target-eps", "5e6"}, {"--k", "50", "--lists", "100", "--target-eps", "1e-15"}} {
		_, _, err := run(t, append([]string{"account"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "outside the range") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, _, err := run(t, "account", "--k", "1", "--target-eps", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestAccountUnit: --unit is reported in the text and JSON output and never
// changes a cost: the per-pick mechanisms are calibrated to the party unit
// (their figures hold for a party, hence for a pair), and a dplp-list list
// costs eps under the unit it was calibrated for, whatever K (under the pair
// unit the output states group privacy: m x pure_eps, m^2 x zcdp_rho).
func TestAccountUnit(t *testing.T) {
	listSummary := func(n int, eps, delta float64) accountant.Summary {
		rho := float64(n) * eps * eps / 2
		z, _ := accountant.ZCDPToApprox(rho, delta)
		return accountant.Summary{PureEps: float64(n) * eps, Rho: rho, ApproxEps: min(float64(n)*eps, z)}
	}
	perPick, _ := accountant.Account(accountant.Release{Lists: 10, K: 30, EpsP: 0.1}, 1e-6)
	for _, tc := range []struct {
		name string
		args []string
		want accountant.Summary
		unit string
		note string // in unit_note ("" : no unit_note)
		mech string // mechanism key ("" : absent)
	}{
		{"exponential/party", []string{"--k", "30", "--lists", "10", "--eps-p", "0.1"}, perPick, "party", "", ""},
		{"exponential/pair", []string{"--k", "30", "--lists", "10", "--eps-p", "0.1", "--unit", "pair"}, perPick, "pair", "calibrated to the party unit", ""},
		{"dplp-list/party/k5", []string{"--mechanism", "dplp-list", "--k", "5", "--lists", "10", "--eps", "0.3"}, listSummary(10, 0.3, 1e-6), "party", "", "dplp-list"},
		{"dplp-list/party/k30", []string{"--mechanism", "dplp-list", "--k", "30", "--lists", "10", "--eps", "0.3"}, listSummary(10, 0.3, 1e-6), "party", "", "dplp-list"},
		{"dplp-list/pair", []string{"--mechanism", "DPLP-List", "--lists", "10", "--eps", "0.3", "--unit", "pair"}, listSummary(10, 0.3, 1e-6), "pair", "m x 3 pure eps and m^2 x 0.45 zCDP rho", "dplp-list"},
		{"dplp-list/pair/many", []string{"--mechanism", "dplp-list", "--lists", "2000", "--eps", "0.01", "--unit", "pair", "--delta", "1e-9"}, listSummary(2000, 0.01, 1e-9), "pair", "m x 20 pure eps", "dplp-list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runAccount(t, append(tc.args, "--json")...)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				accountant.Summary
				Unit      string   `json:"unit"`
				UnitNote  *string  `json:"unit_note"`
				Mechanism string   `json:"mechanism"`
				EpsList   *float64 `json:"eps_list"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err, out)
			}
			if math.Abs(got.PureEps-tc.want.PureEps) > 1e-12 || math.Abs(got.Rho-tc.want.Rho) > 1e-12 || math.Abs(got.ApproxEps-tc.want.ApproxEps) > 1e-9 {
				t.Errorf("summary %+v, want %+v", got.Summary, tc.want)
			}
			if got.Unit != tc.unit || got.Mechanism != tc.mech || (got.EpsList != nil) != (tc.mech != "") {
				t.Errorf("unit %q mechanism %q eps_list %v: %s", got.Unit, got.Mechanism, got.EpsList, out)
			}
			if (got.UnitNote != nil) != (tc.note != "") || (got.UnitNote != nil && !strings.Contains(*got.UnitNote, tc.note)) {
				t.Errorf("unit_note %v, want one containing %q", got.UnitNote, tc.note)
			}
			text, err := runAccount(t, tc.args...)
			if err != nil || !strings.Contains(text, "unit        "+tc.unit+"  (") || !strings.Contains(text, tc.note) {
				t.Errorf("text (%v):\n%s", err, text)
			}
		})
	}
	if s := listSummary(2000, 0.01, 1e-9); !(s.ApproxEps < s.PureEps) {
		t.Fatalf("the many-lists case should use the zCDP route: %+v", s)
	}
}

// TestAccountListTarget: the largest eps per dplp-list list meeting
// (T, delta) is max(T/N, sqrt(2 MaxRho(T, delta)/N)): its accounting meets T,
// and slightly more would not.
func TestAccountListTarget(t *testing.T) {
	for _, tc := range []struct {
		lists     int
		target    float64
		zcdpRoute bool // the zCDP conversion, not pure composition, sets eps
	}{{1, 2, false}, {10, 5, false}, {2000, 20, true}} {
		out, err := runAccount(t, "--mechanism", "dplp-list", "--lists", strconv.Itoa(tc.lists), "--target-eps", strconv.FormatFloat(tc.target, 'g', -1, 64), "--delta", "1e-9", "--unit", "pair", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			accountant.Summary
			EpsList float64  `json:"eps_list"`
			EpsP    *float64 `json:"eps_p"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err, out)
		}
		pure := tc.target / float64(tc.lists)
		if got.EpsP != nil || got.ApproxEps > tc.target*(1+1e-12) || got.EpsList < pure || (got.EpsList > pure*1.001) != tc.zcdpRoute {
			t.Errorf("%d lists, target %g: %s", tc.lists, tc.target, out)
		}
		more := got.EpsList * 1.0001
		rho := float64(tc.lists) * more * more / 2
		z, _ := accountant.ZCDPToApprox(rho, 1e-9)
		if min(float64(tc.lists)*more, z) <= tc.target {
			t.Errorf("%d lists: eps %v x 1.0001 still meets %g", tc.lists, got.EpsList, tc.target)
		}
	}
}

// TestAccountGauss: the Gaussian release has no pure bound (null in JSON),
// rho N eps^2/2 and the tight conversion; its target inverts the
// conversion alone; the same rho under dplp-list keeps its pure eps.
func TestAccountGauss(t *testing.T) {
	for _, tc := range []struct {
		lists int
		eps   float64
	}{{1, 3}, {10, 1}, {100, 1}} {
		out, err := runAccount(t, "--mechanism", "dplp-list-gauss", "--eps", strconv.FormatFloat(tc.eps, 'g', -1, 64), "--lists", strconv.Itoa(tc.lists), "--json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err, out)
		}
		rho := float64(tc.lists) * tc.eps * tc.eps / 2
		want, _ := accountant.ZCDPToApprox(rho, 1e-6)
		if v, ok := m["pure_eps"]; !ok || v != nil || m["zcdp_rho"] != rho || m["approx_eps"] != want || m["mechanism"] != "dplp-list-gauss" {
			t.Fatalf("%+v: %v", tc, m)
		}
	}
	out, err := runAccount(t, "--mechanism", "dplp-list-gauss", "--target-eps", "10", "--lists", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err, out)
	}
	rho, _ := accountant.MaxRho(10, 1e-6)
	if e := m["eps_list"].(float64); math.Abs(e-math.Sqrt(2*rho/4)) > 1e-12 || math.Abs(m["approx_eps"].(float64)-10) > 1e-6 {
		t.Fatalf("target: %v", m)
	}
	text, err := runAccount(t, "--mechanism", "dplp-list-gauss", "--eps", "3")
	if err != nil || !strings.Contains(text, "pure_eps    none") {
		t.Fatalf("%v: %s", err, text)
	}
}
