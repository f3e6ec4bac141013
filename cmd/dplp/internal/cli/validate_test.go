package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/experiment"
	"github.com/dplp/dplp/train"
)

func TestCheckersRejectNaNInf(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	checks := map[string]func(string, float64) error{
		"frac":   checkFrac,
		"pos":    checkPos,
		"finite": checkFinite,
		"eps":    func(n string, x float64) error { return checkEps(n, x, 30) },
	}
	for name, c := range checks {
		for _, x := range []float64{nan, inf, -inf} {
			err := c("some-flag", x)
			if err == nil {
				t.Errorf("%s(%v) accepted", name, x)
				continue
			}
			if !strings.Contains(err.Error(), "--some-flag") {
				t.Errorf("%s(%v): error %q does not name the flag", name, x, err)
			}
		}
	}
	for _, x := range []float64{0, 0.5, 1} {
		if err := checkFrac("f", x); err != nil {
			t.Errorf("checkFrac(%v): %v", x, err)
		}
	}
	for _, x := range []float64{-0.1, 1.1} {
		if checkFrac("f", x) == nil {
			t.Errorf("checkFrac(%v) accepted", x)
		}
	}
	for _, x := range []float64{0, -1, math.SmallestNonzeroFloat64 * -1} {
		if checkPos("p", x) == nil {
			t.Errorf("checkPos(%v) accepted", x)
		}
	}
	if err := checkPos("p", math.MaxFloat64); err != nil {
		t.Errorf("checkPos(MaxFloat64): %v", err)
	}
}

func TestCheckEps(t *testing.T) {
	for _, eps := range []float64{MinEps, 0.1, 1, 10, MaxEps} {
		if err := checkEps("eps", eps, 30); err != nil {
			t.Errorf("checkEps(%v): %v", eps, err)
		}
	}
	// 1e-320 is subnormal: 2/eps = +Inf and training produced NaN losses;
	// 1e308 made K x eps overflow and JSON saving fail.
	for _, eps := range []float64{1e-320, math.SmallestNonzeroFloat64, 1e-7, 0, -0.1, 1e308, 2e6, math.MaxFloat64} {
		err := checkEps("eps", eps, 30)
		if err == nil {
			t.Errorf("checkEps(%v) accepted", eps)
		} else if !strings.Contains(err.Error(), "--eps") {
			t.Errorf("checkEps(%v): %q does not name the flag", eps, err)
		}
	}
}

// failWriter accepts limit bytes, then fails every write.
type failWriter struct{ limit int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) <= f.limit {
		f.limit -= len(p)
		return len(p), nil
	}
	n := f.limit
	f.limit = 0
	return n, errors.New("no space left on device")
}

// Every command's output goes through one writer that remembers write
// errors: a command that ignores them (experiment, demo and audit did)
// still exits non-zero with a message.
func TestWriteErrorsFailTheCommand(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\nc a\nc d\n")
	er := filepath.Join(t.TempDir(), "er.txt")
	if _, _, err := run(t, "gen", "er", "--n", "60", "--p", "0.2", "--out", er); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"stats", "--graph", g},
		{"stats", "--graph", g, "--json"},
		{"score", "--graph", g, "--score", "cn", "--all"},
		{"gen", "--help"},
		// experiment printed its last line without checking the error
		{"experiment", "--graph", er, "--score", "cn", "--method", "nonprivate,exponential", "--k", "1", "--out", t.TempDir()},
	} {
		for _, limit := range []int{0, 10} {
			var stderr strings.Builder
			code := execute(args, &failWriter{limit: limit}, &stderr)
			if code == 0 {
				t.Errorf("%v (stdout fails after %d bytes): exit status 0", args, limit)
			}
			if !strings.Contains(stderr.String(), "no space left on device") {
				t.Errorf("%v: stderr lacks the write error: %q", args, stderr.String())
			}
		}
		var stdout, stderr strings.Builder
		if code := execute(args, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit status %d with a working stdout: %s", args, code, stderr.String())
		}
	}
	// A command that ignores its write errors entirely.
	w := &errWriter{w: &failWriter{}}
	fmt.Fprintln(w, "lost")
	fmt.Fprintln(w, "lost too")
	if w.err == nil {
		t.Fatal("errWriter forgot the error")
	}
}

// gen validates every flag before writing anything: ba --coords used to
// write --out and then fail, er --edges -5 was silently ignored (and --p
// used instead), an explicit --radius nan fell back to --mean-degree, and
// latent with 10^8 nodes died out of memory.
func TestGenValidatesBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "g.txt")
	target := filepath.Join(dir, "target.txt")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"gen", "ba", "--n", "50", "--coords", filepath.Join(dir, "c.txt"), "--out", out}, "--coords is for the latent model"},
		{[]string{"gen", "er", "--n", "50", "--edges", "-5", "--out", out}, "--edges must be in [1,"},
		{[]string{"gen", "er", "--n", "50", "--edges", "-5", "--p", "0.1", "--out", out}, "either --p or --edges"},
		{[]string{"gen", "er", "--n", "50", "--p", "nan", "--out", out}, "--p must be in (0,1]"},
		{[]string{"gen", "er", "--n", "50", "--p", "0.1", "--m", "3", "--out", out}, "--m is for the ba model"},
		{[]string{"gen", "latent", "--n", "50", "--radius", "nan", "--out", out}, "--radius must be a finite number > 0"},
		{[]string{"gen", "latent", "--n", "50", "--radius", "inf", "--out", out}, "--radius must be a finite number > 0"},
		{[]string{"gen", "latent", "--n", "50", "--mean-degree", "nan", "--out", out}, "--mean-degree must be a finite number > 0"},
		{[]string{"gen", "latent", "--n", "50", "--radius", "0.2", "--mean-degree", "3", "--out", out}, "either --radius or --mean-degree"},
		{[]string{"gen", "latent", "--n", "100000000", "--out", out}, "memory"},
		{[]string{"gen", "ba", "--n", "50", "--m", "50", "--out", out}, "--m must be in [1, n-1]"},
		{[]string{"gen", "ba", "--n", "50", "--out", link}, "symbolic link"},
		{[]string{"gen", "ba", "--n", "50", "--out", dir}, "directory"},
		{[]string{"gen", "latent", "--n", "50", "--out", out, "--coords", link}, "symbolic link"},
	}
	for _, c := range cases {
		_, _, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Fatalf("%v: wrote %s before failing", c.args, out)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("symlink target changed: %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced")
	}
	// --out - writes to standard output; --edges chooses G(n,m).
	stdout, _, err := run(t, "gen", "er", "--n", "30", "--edges", "40", "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); len(lines) != 41 || !strings.HasPrefix(lines[0], "# generated by dplp gen er n=30 edges=40") {
		t.Fatalf("stdout output: %d lines, first %q", len(lines), lines[0])
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 2 {
		t.Fatalf("directory holds %d entries, want the target and the link", len(es))
	}
}

// Variant names are the same everywhere: lin/umnn and dplp-lin/dplp-umnn,
// in any case, for train and audit (evaluate.ParseVariant) and for
// experiment methods.
func TestVariantNames(t *testing.T) {
	for in, want := range map[string]train.Variant{"lin": train.Lin, "dplp-lin": train.Lin, "UMNN": train.UMNN,
		"dplp-umnn": train.UMNN, " DPLP-Pub ": train.DPLPPub, "dplp": train.DPLP} {
		if v, err := evaluate.ParseVariant(in); err != nil || v != want {
			t.Errorf("ParseVariant(%q) = %q, %v; want %q", in, v, err, want)
		}
	}
	if _, err := evaluate.ParseVariant("dplp-x"); err == nil || !strings.Contains(err.Error(), "dplp-lin") {
		t.Errorf("unknown variant error %v does not list the names", err)
	}
	for _, m := range []string{"lin", "umnn", "dplp-lin", "dplp-umnn"} {
		cfg := experiment.DefaultConfig()
		cfg.Graphs = []string{writeTemp(t, "g.txt", "a b\nb c\n")}
		cfg.Methods = []string{m}
		if err := cfg.Validate(); err != nil {
			t.Errorf("experiment method %q: %v", m, err)
		}
	}
}

// The eval-lp bar spans all fits: each fit's counts restart, and the bar
// advances by differences, never past fits x total.
func TestFitBar(t *testing.T) {
	b := &fitBar{desc: "x", fits: 3}
	for f := 0; f < 3; f++ {
		for _, d := range []int{10, 40, 100} {
			b.update(d, 100)
		}
	}
	b.update(100, 100)
	if b.fit != 2 || b.pos != 300 {
		t.Fatalf("fit %d pos %d, want 2 and 300", b.fit, b.pos)
	}
	b.finish()
}

// Float flags of score and eval-lp reject NaN and Inf (--n2v-p inf was
// accepted, --lo nan gave a confusing message).
func TestPredictorFloatFlags(t *testing.T) {
	g := writeTemp(t, "g.txt", "a b\nb c\nc a\nc d\n")
	for _, c := range []struct{ flag, val, want string }{
		{"--n2v-p", "inf", "--n2v-p must be a finite number > 0"},
		{"--n2v-q", "nan", "--n2v-q must be a finite number > 0"},
		{"--lo", "nan", "--lo must be a finite number"},
		{"--hi", "-inf", "--hi must be a finite number"},
	} {
		for _, cmd := range [][]string{
			{"score", "--graph", g, "--score", "cn", "--all"},
			{"eval-lp", "--graph", g, "--score", "cn"},
		} {
			_, _, err := run(t, append(cmd, c.flag, c.val)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v %s %s: error %v, want %q", cmd[0], c.flag, c.val, err, c.want)
			}
		}
	}
}
