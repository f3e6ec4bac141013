package attack

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// TestReportUnits: results without a unit are party-unit; the markdown table
// gains a unit column only when some result is under another unit, shows
// dplp-list's eps per list, and the CSV ends with unit and eps_list columns.
func TestReportUnits(t *testing.T) {
	claim := 1.5
	partyRes := &Result{Graph: "g", Attack: "triad", Method: "exponential", Calibration: "rigorous", EpsP: 0.5, K: 3, EpsClaimed: &claim, ClaimProven: true}
	one := 1.0
	listRes := &Result{Graph: "g", Attack: "triad", Method: DPLPList, Calibration: "rigorous", Unit: "pair", EpsList: 1, K: 3, EpsClaimed: &one, ClaimProven: true, EpsLowerBound: 0.2}
	for _, tc := range []struct {
		name    string
		results []*Result
		header  string
		rows    []string
	}{
		{"party only", []*Result{partyRes}, "| graph | release | eps_p | triad: accuracy / eps_lb (claim) |",
			[]string{"| g | exponential/rigorous | 0.5 | 0.000 / 0.00 (1.5) |"}},
		{"with pair", []*Result{listRes, partyRes}, "| graph | release | unit | eps_p | triad: accuracy / eps_lb (claim) |",
			[]string{"| g | exponential/rigorous | party | 0.5 | 0.000 / 0.00 (1.5) |", "| g | dplp-list | pair | 1/list | 0.000 / 0.20 (1) |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var md bytes.Buffer
			if err := WriteMarkdown(&md, tc.results); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(md.String()), "\n")
			if lines[0] != tc.header || strings.Join(lines[2:], "\n") != strings.Join(tc.rows, "\n") {
				t.Errorf("markdown:\n%s", md.String())
			}
			var c bytes.Buffer
			if err := WriteCSV(&c, tc.results); err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(&c).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			n := len(recs[0])
			if recs[0][n-2] != "unit" || recs[0][n-1] != "eps_list" {
				t.Fatalf("csv header %v", recs[0])
			}
			for i, r := range tc.results {
				want := [2]string{"party", ""}
				if r.Method == DPLPList {
					want = [2]string{"pair", "1"}
				}
				if got := [2]string{recs[i+1][n-2], recs[i+1][n-1]}; got != want {
					t.Errorf("row %d: unit, eps_list %v, want %v", i, got, want)
				}
			}
		})
	}
	if got := listRes.label(); got != "dplp-list (pair unit)" || partyRes.label() != "exponential/rigorous" {
		t.Errorf("plot labels %q, %q", got, partyRes.label())
	}
}
