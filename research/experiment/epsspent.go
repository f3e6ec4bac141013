package experiment

import (
	"fmt"
	"strings"

	"github.com/dplp/dplp/ranking"
)

// epsSpentTable renders, under a summary table, the mean protected-pair
// eps charged per released list (column eps_list of results.json: eps_spent
// for per-pick methods, list_cost for the list-level ones), averaged
// over seeds, one line per dataset and score listing every method with a
// finite cost: K x eps_p for the exponential mechanism and DPLP, less for
// DPLP-pub (only its random picks are charged, privacy-model §11), 0 for
// public-only. Empty when no row has the column (cells cached before it
// existed). A list rather than a table, so that the summary's tables stay
// one per setting.
func epsSpentTable(p *plan, rows []Row, prot, cal string, eps float64, budget string, sigma float64, k int, unit string) string {
	vals := map[aggKey][]float64{}
	for i := range rows {
		if rows[i].EpsList != nil {
			key := rowAgg(&rows[i])
			vals[key] = append(vals[key], *rows[i].EpsList)
		}
	}
	var b strings.Builder
	for _, ds := range p.datasets {
		for _, pr := range p.preds {
			var parts []string
			for _, m := range p.methods {
				v := vals[aggKey{ds, pr.name, m.name, cal, prot, eps, budget, sigma, k, unit}]
				if len(v) == 0 {
					continue
				}
				mean, _ := ranking.MeanCI(v)
				parts = append(parts, fmt.Sprintf("%s %.3g", m.name, mean))
			}
			if len(parts) > 0 {
				fmt.Fprintf(&b, "- %s %s: %s\n", ds, pr.display(), strings.Join(parts, ", "))
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	if budget != "" {
		return fmt.Sprintf("Mean eps charged per list (`eps_list`, pure composition of the charged picks; K x eps_p = %.4g; "+
			"under the budget's own accounting a full list costs %s):\n\n%s\n", float64(k)*eps, budget, b.String())
	}
	return fmt.Sprintf("Mean eps charged per list (`eps_list`; per-pick methods: K x eps_p = %s at most; list-level methods: eps per list, "+
		"perturb-once its one-time release):\n\n%s\n", fmtF(float64(k)*eps), b.String())
}
