package model

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/train"
)

// FuzzLoad: arbitrary file contents never make Load panic, and whatever
// loads can be evaluated (Utility, Delta) without panicking.
//
//	go test -run XXX -fuzz FuzzLoad -fuzztime 60s ./model
func FuzzLoad(f *testing.F) {
	m := &Model{Score: "aa", Variant: VariantDPLPPub, EpsP: 0.5, Grid: 3,
		F: []float64{0, 0.25, 1}}
	dir := f.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := Save(good, m); err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(`{"format_version": 1, "model": {}, "sha256": ""}`))
	f.Add([]byte(`{"format_version": 1, "model": {"score": "aa", "variant": "dplp", "eps_p": 1, "grid": 2, "f": [0, 1]}, "sha256": "00"}`))
	f.Add([]byte(`{"format_version": 2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "m.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Load(p)
		if err != nil {
			if m != nil {
				t.Fatal("Load returned a model and an error")
			}
			return
		}
		for _, x := range []float64{0, 0.25, 1, math.NaN()} {
			_ = m.Utility(x, x, 1) // must not panic
			if d := m.Delta(x, 1); d < 0 {
				t.Fatalf("loaded model: Delta %v < 0 at %v", d, x)
			}
		}
	})
}

// The checksum detects corruption, not deliberate edits: an edit with the
// checksum recomputed loads (as the package documentation states).
func TestRecomputedChecksumLoads(t *testing.T) {
	m := newModel(t, train.DPLP)
	m.Meta.Dataset = "edited"
	sum, body, err := checksum(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(envelope{FormatVersion: FormatVersion, Model: body, SHA256: sum})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatalf("edited file with recomputed checksum rejected: %v", err)
	}
	if got.Meta.Dataset != "edited" {
		t.Fatalf("dataset %q", got.Meta.Dataset)
	}
}

// Save replaces regular files only: a symbolic link, a directory or a
// device at the path is refused and left as it was (as root, saving to
// /dev/full used to replace the device with a regular file).
func TestSaveRefusesNonRegular(t *testing.T) {
	m := newModel(t, train.Lin)
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	paths := []string{link, dir}
	if st, err := os.Lstat("/dev/full"); err == nil && st.Mode()&fs.ModeDevice != 0 {
		paths = append(paths, "/dev/full")
	}
	for _, p := range paths {
		err := Save(p, m)
		if !errors.Is(err, atomicfile.ErrNotRegular) {
			t.Errorf("Save(%s): error %v, want ErrNotRegular", p, err)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("symlink replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("link target changed: %q", b)
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.Contains(e.Name(), "tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}
