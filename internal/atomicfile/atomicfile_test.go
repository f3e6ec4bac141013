package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := Write(p, writeString("one\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != DefaultMode {
		t.Fatalf("new file mode %v, want %v", st.Mode().Perm(), DefaultMode)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, writeString("two\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ = os.Stat(p)
	if string(b) != "two\n" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v, want \"two\\n\" mode 0600", b, st.Mode().Perm())
	}
	if got := names(t, dir); !slices.Equal(got, []string{"out.txt"}) {
		t.Fatalf("directory holds %v", got)
	}
	if err := WriteMode(filepath.Join(dir, "x"), 0o640, writeString("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "x")); st.Mode().Perm() != 0o640 {
		t.Fatalf("WriteMode gave %v", st.Mode().Perm())
	}
}

func TestRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"symlink": link, "directory": sub}
	if fifo := makeFifo(t, dir); fifo != "" {
		cases["fifo"] = fifo
	}
	for _, dev := range []string{"/dev/null", "/dev/full"} {
		if st, err := os.Lstat(dev); err == nil && st.Mode()&fs.ModeDevice != 0 {
			cases[dev] = dev
		}
	}
	for what, p := range cases {
		before := names(t, dir)
		if err := Check(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Check(%s): %v", what, err)
		}
		called := false
		err := Write(p, func(w io.Writer) error { called = true; return writeString("new")(w) })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want ErrNotRegular naming %s", what, err, p)
		}
		if called {
			t.Errorf("%s: fn was called", what)
		}
		if after := names(t, dir); !slices.Equal(before, after) {
			t.Errorf("%s: directory changed from %v to %v", what, before, after)
		}
	}
	if Check(target) != nil || Check(filepath.Join(dir, "new")) != nil {
		t.Error("Check refused a regular or missing file")
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("symlink replaced: %v %v", st, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("target through the link changed: %q", b)
	}
}

func TestNoTempLeftovers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Write(p, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("x", 1<<20)) // past the buffer: the temp file has data
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		Write(p, func(io.Writer) error { panic("fn panics") })
	}()
	// A missing directory fails before anything is created.
	if err := Write(filepath.Join(dir, "nodir", "out"), writeString("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if got := names(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Fatalf("directory holds %v, want only out", got)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("target changed to %q", b)
	}
}
