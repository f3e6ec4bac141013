package plot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestSave(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		fig  Figure
	}{
		{"lin", Figure{Title: "AUC@K vs eps", XLabel: "eps", YLabel: "AUC@K", Series: []Series{
			{Name: "a", X: []float64{0.1, 0.5, 0.9}, Y: []float64{0.2, 0.4, 0.5}, Err: []float64{0.01, math.NaN(), 0.02}},
			{Name: "b", X: []float64{0.1, 0.5, 0.9}, Y: []float64{0.3, 0.3, 0.3}},
		}, HLines: []HLine{{Name: "limit", Y: 0.6}}}},
		{"log", Figure{LogX: true, XTicks: []float64{0.01, 1, 100}, Series: []Series{{Name: "a", X: []float64{0.01, 1, 100}, Y: []float64{3, 2, 0}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join(dir, "sub", c.name)
			if err := c.fig.Save(base); err != nil {
				t.Fatal(err)
			}
			png, err := os.ReadFile(base + ".png")
			if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
				t.Fatalf("bad png: %v (%d bytes)", err, len(png))
			}
			svg, err := os.ReadFile(base + ".svg")
			if err != nil || !bytes.Contains(svg, []byte("<svg")) {
				t.Fatalf("bad svg: %v (%d bytes)", err, len(svg))
			}
		})
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := []Figure{
		{},
		{Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1, 2}}}},
		{Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1}, Err: []float64{1, 2}}}},
		{LogX: true, Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{1, 2}}}},
		{Series: []Series{{Name: "a", X: []float64{math.NaN()}, Y: []float64{1}}}},
	}
	for i, f := range bad {
		if err := f.Save(filepath.Join(dir, "x")); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

// A symbolic link or a device at the target is refused, never written
// through or replaced.
func TestSaveRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.png")
	if err := os.WriteFile(other, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "fig")
	if err := os.Symlink(other, base+".png"); err != nil {
		t.Skip("no symlinks:", err)
	}
	f := &Figure{Title: "t", XLabel: "x", YLabel: "y", Series: []Series{{Name: "a", X: []float64{0, 1}, Y: []float64{0, 1}}}}
	if err := f.Save(base); err == nil {
		t.Fatal("a symbolic link target was accepted")
	}
	if b, _ := os.ReadFile(other); string(b) != "keep" {
		t.Fatal("the link's target was overwritten")
	}
}
