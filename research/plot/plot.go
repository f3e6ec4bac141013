// Package plot draws the experiment figures (lines with optional 95%
// confidence error bars, optional log-scaled x axis and horizontal reference
// lines) with gonum.org/v1/plot and writes each figure as PNG and SVG.
package plot

import (
	"errors"
	"fmt"
	"github.com/dplp/dplp/internal/atomicfile"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one line of a figure. Err, when non-nil, holds the half-width
// of a symmetric error bar for every point (NaN: no bar).
type Series struct {
	Name string
	X, Y []float64
	Err  []float64
}

// HLine is a dashed horizontal reference line across the whole x range.
type HLine struct {
	Name string
	Y    float64
}

// Figure is a line plot.
type Figure struct {
	Title, XLabel, YLabel string
	LogX                  bool      // logarithmic x axis (every x must be > 0)
	XTicks                []float64 // labelled x ticks (nil: automatic)
	Series                []Series
	HLines                []HLine
	// Width and Height in centimetres; 0 means 14 x 10.
	Width, Height float64
}

// Save writes the figure to base+".png" and base+".svg", creating the
// directory if needed.
func (f *Figure) Save(base string) error {
	p, leg, err := f.build()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	w, h := vg.Length(f.Width)*vg.Centimeter, vg.Length(f.Height)*vg.Centimeter
	if w <= 0 {
		w = 14 * vg.Centimeter
	}
	if h <= 0 {
		h = 10 * vg.Centimeter
	}
	// The legend goes in a strip right of the plot so it never hides data.
	pad := vg.Points(8)
	legW := leg.Rectangle(draw.Canvas{}).Size().X + 2*pad
	W := w + legW
	draw1 := func(c vg.CanvasSizer) {
		dc := draw.New(c)
		p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
		leg.Draw(draw.Crop(dc, w+pad, -pad, 0, -pad))
	}
	png := vgimg.NewWith(vgimg.UseWH(W, h), vgimg.UseDPI(120))
	draw1(png)
	if err := writeFile(base+".png", vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(W, h)
	draw1(svg)
	return writeFile(base+".svg", svg)
}

// writeFile writes a figure atomically (internal/atomicfile: temporary
// file, fsync, rename; a symbolic link, device, directory or pipe at path is
// refused, never replaced or written through).
func writeFile(path string, w io.WriterTo) error {
	err := atomicfile.Write(path, func(f io.Writer) error {
		_, err := w.WriteTo(f)
		return err
	})
	if err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	return nil
}

// errXY adapts a series to plotter's XYer and YErrorer.
type errXY struct {
	plotter.XYs
	e []float64
}

func (e errXY) YError(i int) (float64, float64) { return e.e[i], e.e[i] }

func (f *Figure) build() (*gplot.Plot, *gplot.Legend, error) {
	if len(f.Series) == 0 {
		return nil, nil, errors.New("plot: figure has no series")
	}
	p := gplot.New()
	leg := gplot.NewLegend()
	leg.Top = true
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Add(plotter.NewGrid())
	if f.LogX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	if len(f.XTicks) > 0 {
		ticks := make([]gplot.Tick, len(f.XTicks))
		for i, x := range f.XTicks {
			ticks[i] = gplot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)}
		}
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, s := range f.Series {
		if len(s.X) != len(s.Y) || (s.Err != nil && len(s.Err) != len(s.X)) {
			return nil, nil, fmt.Errorf("plot: series %q: x, y and error lengths differ", s.Name)
		}
		var xys plotter.XYs
		var bars errXY
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				continue
			}
			if f.LogX && x <= 0 {
				return nil, nil, fmt.Errorf("plot: series %q: x = %v on a log axis", s.Name, x)
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if s.Err != nil && !math.IsNaN(s.Err[j]) && !math.IsInf(s.Err[j], 0) && s.Err[j] > 0 {
				bars.XYs = append(bars.XYs, plotter.XY{X: x, Y: y})
				bars.e = append(bars.e, s.Err[j])
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, nil, err
		}
		c := plotutil.Color(i)
		line.Color = c
		line.Dashes = plotutil.Dashes(i / 7)
		pts.Color = c
		pts.Shape = plotutil.Shape(i)
		p.Add(line, pts)
		leg.Add(s.Name, line, pts)
		if len(bars.e) > 0 {
			eb, err := plotter.NewYErrorBars(bars)
			if err != nil {
				return nil, nil, err
			}
			eb.Color = c
			p.Add(eb)
		}
	}
	if math.IsInf(xmin, 1) {
		return nil, nil, errors.New("plot: figure has no finite point")
	}
	for i, h := range f.HLines {
		if math.IsNaN(h.Y) || math.IsInf(h.Y, 0) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.Y}, {X: xmax, Y: h.Y}})
		if err != nil {
			return nil, nil, err
		}
		l.Color = plotutil.Color(len(f.Series) + i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		leg.Add(h.Name, l)
	}
	return p, &leg, nil
}
