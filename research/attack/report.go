package attack

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dplp/dplp/privunit"
)

// privunitNames orders units in tables: party first.
var privunitNames = []string{privunit.Party.String(), privunit.Pair.String()}

// Release names the release configuration of a result, e.g.
// "exponential/rigorous" ("nonprivate", "public-only" and "dplp-list"
// alone: they have no calibration to choose).
func (r *Result) Release() string {
	if r.Method == "nonprivate" || r.Method == "public-only" || r.Method == DPLPList {
		return r.Method
	}
	return r.Method + "/" + r.Calibration
}

// PrivacyUnit is the result's privacy unit: "party" when the result
// carries none (per-pick results written before units, and per-pick
// party-unit results, which omit it).
func (r *Result) PrivacyUnit() string {
	if r.Unit == "" {
		return privunit.Party.String()
	}
	return r.Unit
}

// eps is the result's eps: per pick, or per list for dplp-list.
func (r *Result) eps() float64 {
	if r.EpsList != 0 {
		return r.EpsList
	}
	return r.EpsP
}

// label names a result's series in plots: the release, with the unit when
// it is not the party unit.
func (r *Result) label() string {
	if u := r.PrivacyUnit(); u != privunit.Party.String() {
		return r.Release() + " (" + u + " unit)"
	}
	return r.Release()
}

func fmtClaim(r *Result) string {
	if r.EpsClaimed == nil {
		return "none"
	}
	s := strconv.FormatFloat(*r.EpsClaimed, 'g', 3, 64)
	if !r.ClaimProven {
		s += "*"
	}
	return s
}

// WriteCSV writes one row per result. The last columns are the privacy
// unit (party for results without one) and dplp-list's eps per list (empty
// for per-pick mechanisms).
func WriteCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"graph", "attack", "method", "calibration", "score", "eps_p", "k", "lists", "trials", "positives",
		"tpr", "tpr_lo", "tpr_hi", "fpr", "fpr_lo", "fpr_hi", "accuracy", "eps_claimed", "claim_proven", "eps_lower_bound", "exceeds_claim",
		"observers", "candidate", "secret_pairs", "unit", "eps_list"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range results {
		claim := ""
		if r.EpsClaimed != nil {
			claim = f(*r.EpsClaimed)
		}
		var pairs []string
		for _, p := range r.Target.Pairs {
			pairs = append(pairs, p[0]+"-"+p[1])
		}
		epsList := ""
		if r.EpsList != 0 {
			epsList = f(r.EpsList)
		}
		cw.Write([]string{r.Graph, r.Attack, r.Method, r.Calibration, r.Score, f(r.EpsP), strconv.Itoa(r.K), strconv.Itoa(r.Lists),
			strconv.Itoa(r.Trials), strconv.Itoa(r.Positives), f(r.TPR), f(r.TPRCI[0]), f(r.TPRCI[1]), f(r.FPR), f(r.FPRCI[0]), f(r.FPRCI[1]),
			f(r.Accuracy), claim, strconv.FormatBool(r.ClaimProven), f(r.EpsLowerBound), strconv.FormatBool(r.ExceedsClaim),
			strings.Join(r.Target.Observers, " "), r.Target.Candidate, strings.Join(pairs, " "), r.PrivacyUnit(), epsList})
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes a table with one row per graph, release, privacy
// unit and eps and, per attack, "accuracy / eps_lb (claim)"; a claim marked
// * is not proven, and eps_lb is bold when it exceeds the claim. The unit
// column appears when some result is not under the party unit; dplp-list's
// eps is per list ("E/list").
func WriteMarkdown(w io.Writer, results []*Result) error {
	var attacks []string
	type key struct {
		graph, release, unit string
		eps                  float64
	}
	rows := map[key]map[string]*Result{}
	var keys []key
	units := false
	for _, r := range results {
		if !slices.Contains(attacks, r.Attack) {
			attacks = append(attacks, r.Attack)
		}
		units = units || r.PrivacyUnit() != privunit.Party.String()
		k := key{r.Graph, r.Release(), r.PrivacyUnit(), r.eps()}
		if rows[k] == nil {
			rows[k] = map[string]*Result{}
			keys = append(keys, k)
		}
		rows[k][r.Attack] = r
	}
	order := func(a []string, s string) int {
		if i := slices.Index(a, s); i >= 0 {
			return i
		}
		return len(a)
	}
	rel := []string{"nonprivate", "exponential/rigorous", "exponential/reference", "laplace/rigorous", "laplace/reference", DPLPList}
	att := []string{"triad", "sybil", "no-noise"}
	slices.SortStableFunc(attacks, func(a, b string) int { return cmp.Compare(order(att, a), order(att, b)) })
	var graphs []string
	for _, k := range keys {
		if !slices.Contains(graphs, k.graph) {
			graphs = append(graphs, k.graph)
		}
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(order(graphs, a.graph), order(graphs, b.graph)),
			cmp.Compare(order(rel, a.release), order(rel, b.release)), cmp.Compare(a.release, b.release),
			cmp.Compare(order(privunitNames, a.unit), order(privunitNames, b.unit)), cmp.Compare(a.eps, b.eps))
	})
	hdr := "| graph | release | eps_p |"
	sep := "|---|---|---|"
	if units {
		hdr = "| graph | release | unit | eps_p |"
		sep = "|---|---|---|---|"
	}
	for _, a := range attacks {
		hdr += " " + a + ": accuracy / eps_lb (claim) |"
		sep += "---|"
	}
	if _, err := fmt.Fprintln(w, hdr+"\n"+sep); err != nil {
		return err
	}
	for _, k := range keys {
		eps := strconv.FormatFloat(k.eps, 'g', -1, 64)
		switch k.release {
		case "nonprivate":
			eps = "-"
		case DPLPList:
			eps += "/list"
		}
		line := fmt.Sprintf("| %s | %s | %s |", k.graph, k.release, eps)
		if units {
			line = fmt.Sprintf("| %s | %s | %s | %s |", k.graph, k.release, k.unit, eps)
		}
		for _, a := range attacks {
			r := rows[k][a]
			if r == nil {
				line += " |"
				continue
			}
			lb := fmt.Sprintf("%.2f", r.EpsLowerBound)
			if r.ExceedsClaim {
				lb = "**" + lb + "**"
			}
			line += fmt.Sprintf(" %.3f / %s (%s) |", r.Accuracy, lb, fmtClaim(r))
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// Plot draws eps_lb against the claimed eps (log x axis) for every result
// with a finite claim, one series per release configuration, with the
// diagonal eps_lb = eps_claimed: points above it refute their claim at 95%.
// It writes base+".png" and base+".svg".
func Plot(results []*Result, base, title string) error {
	groups := map[string]plotter.XYs{}
	var names []string
	ymax, xmin, xmax := 1.0, math.Inf(1), math.Inf(-1)
	perfect := 0.0 // the largest eps_lb the trials can show (every guess right)
	for _, r := range results {
		if r.EpsClaimed == nil || *r.EpsClaimed <= 0 {
			continue
		}
		perfect = math.Max(perfect, EpsLowerBound(r.Positives, r.Positives, 0, r.Trials-r.Positives, Confidence))
		n := r.label()
		if _, ok := groups[n]; !ok {
			names = append(names, n)
		}
		x := *r.EpsClaimed
		groups[n] = append(groups[n], plotter.XY{X: x, Y: r.EpsLowerBound})
		ymax = math.Max(ymax, r.EpsLowerBound)
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
	}
	if len(names) == 0 {
		return fmt.Errorf("attack: no result with a finite claim to plot")
	}
	slices.Sort(names)
	// Series side by side around each claim, so equal points stay visible.
	for i, n := range names {
		f := math.Pow(1.06, float64(i)-float64(len(names)-1)/2)
		for j := range groups[n] {
			groups[n][j].X *= f
		}
	}
	ymax = math.Max(ymax, perfect)
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "claimed eps of the observation"
	p.Y.Label.Text = "measured eps lower bound (95%)"
	p.X.Scale = gplot.LogScale{}
	p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, ymax*1.5 // headroom for the legend
	p.X.Min, p.X.Max = xmin/1.5, xmax*1.5
	// Diagonal, clipped to the y range.
	var diag plotter.XYs
	for x := p.X.Min; x <= math.Min(p.X.Max, p.Y.Max); x *= 1.05 {
		diag = append(diag, plotter.XY{X: x, Y: x})
	}
	if len(diag) > 1 {
		l, err := plotter.NewLine(diag)
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("eps_lb = claim", l)
	}
	if perfect > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: perfect}, {X: p.X.Max, Y: perfect}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("largest eps_lb the trials can show (%.2f)", perfect), l)
	}
	for i, n := range names {
		sc, err := plotter.NewScatter(groups[n])
		if err != nil {
			return err
		}
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		sc.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(n, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	w, h := 16*vg.Centimeter, 11*vg.Centimeter
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120))
	p.Draw(draw.New(png))
	if err := writeTo(base+".png", vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	p.Draw(draw.New(svg))
	return writeTo(base+".svg", svg)
}

func writeTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
