package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
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
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err, out)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"approx_eps", "pure_eps", "zcdp_rho"}) {
		t.Fatalf("keys %v", keys)
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
	if err := json.Unmarshal([]byte(out), &m); err != nil {
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
	for _, s := range []string{"pure_eps    1.5", "zcdp_rho", "approx_eps"} {
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
