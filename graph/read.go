package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dplp/dplp/internal/par"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// ReadReport says what reading an edge list did besides building the graph.
type ReadReport struct {
	Name             string // file name used in messages
	Lines            int64  // lines read, comments and blanks included
	EdgeLines        int64  // lines that named an edge
	ExtraColumnLines int64  // edge lines with more than two columns (ignored columns)
	FirstExtraColumn int64  // line number of the first such line (0 if none)
	BuildStats              // self-loops dropped and duplicates merged
}

// Notes renders the report's warnings, one per kind, for stderr.
func (r *ReadReport) Notes() []string {
	var out []string
	if r.ExtraColumnLines > 0 {
		out = append(out, fmt.Sprintf("%s: %d lines have more than two columns (first at line %d); extra columns ignored",
			r.Name, r.ExtraColumnLines, r.FirstExtraColumn))
	}
	if r.SelfLoopsDropped > 0 {
		out = append(out, fmt.Sprintf("%s: %d self-loops dropped", r.Name, r.SelfLoopsDropped))
	}
	if r.DuplicatesMerged > 0 {
		out = append(out, fmt.Sprintf("%s: %d repeated or reciprocal lines merged", r.Name, r.DuplicatesMerged))
	}
	return out
}

// LineError is a problem on one line of an input file.
type LineError struct {
	File string
	Line int64
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Open opens path for reading, decompressing .gz and .zst transparently.
// The returned closer closes both the decompressor and the file.
func Open(path string) (io.Reader, io.Closer, error) { return OpenProgress(path, nil) }

// countingFile reports the bytes read from the (compressed) file.
type countingFile struct {
	*os.File
	progress func(n int)
}

func (c countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	if n > 0 {
		c.progress(n)
	}
	return n, err
}

// OpenProgress is Open that calls progress with the number of bytes read
// from the file on disk (before decompression) as reading proceeds; nil
// means no reporting.
func OpenProgress(path string, progress func(n int)) (io.Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = f
	if progress != nil {
		src = countingFile{f, progress}
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(src)
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, nil, fmt.Errorf("%s: %w (it ends inside the gzip header)", path, ErrTruncated)
			}
			return nil, nil, fmt.Errorf("%s: not a valid gzip file: %w", path, err)
		}
		return zr, closers{zr, f}, nil
	case strings.HasSuffix(path, ".zst"):
		if st, err := f.Stat(); err == nil && st.Size() == 0 && st.Mode().IsRegular() {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w (the file is empty)", path, ErrTruncated)
		}
		zr, err := zstd.NewReader(src)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: not a valid zstd file: %w", path, err)
		}
		return zr, closers{zstdCloser{zr}, f}, nil
	}
	return src, f, nil
}

type closers []io.Closer

func (c closers) Close() error {
	var first error
	for _, x := range c {
		if err := x.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

type zstdCloser struct{ d *zstd.Decoder }

func (z zstdCloser) Close() error { z.d.Close(); return nil }

// ReadFile reads an edge list file (see Parse), decompressing by extension.
func ReadFile(path string) (*Graph, *ReadReport, error) {
	r, c, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	return Parse(r, path)
}

// Parse reads an edge list: one pair per line, in the line syntax described
// in lines.go (LF, CRLF or CR line ends; an initial byte-order mark skipped;
// fields separated by whitespace or commas; '#' and '%' comment lines; every
// field valid UTF-8 without NUL or '"'). Columns after the second (weights)
// are ignored and counted. Labels are arbitrary strings mapped to dense ids in
// the canonical order (CompareLabels; canonical.go), so ids depend only on
// the set of labels, never on the order of lines or of the two endpoints.
// name is used in error messages, which name the line and the problem. The
// input is tokenized in parallel on all cores.
func Parse(r io.Reader, name string) (*Graph, *ReadReport, error) {
	rep := &ReadReport{Name: name}
	chunks, labels, err := parseEdges(r, name, rep)
	if err != nil {
		return nil, rep, err
	}
	if rep.EdgeLines == 0 {
		return nil, rep, fmt.Errorf("%s: %w (no edge lines in %d lines)", name, ErrEmpty, rep.Lines)
	}
	if rank := canonicalRanks(labels); rank != nil {
		labels = permuteLabels(labels, rank)
		_ = par.Run(context.Background(), len(chunks), par.Options{}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
			for j := range chunks[i] {
				e := &chunks[i][j]
				e.U, e.V = rank[e.U], rank[e.V]
			}
			return nil
		})
	}
	g, st, err := fromEdgeChunks(len(labels), chunks, labels)
	rep.BuildStats = st
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			return nil, rep, fmt.Errorf("%s: %w (every line was a self-loop)", name, ErrEmpty)
		}
		return nil, rep, fmt.Errorf("%s: %w", name, err)
	}
	return g, rep, nil
}

// ScanPairs reads a pair-per-line text file with the edge-list syntax of
// Parse and calls fn with the 1-based line number, the first two fields
// (valid only during the call) and whether more columns followed. An error
// returned by fn is wrapped as a *LineError for that line. It returns the
// number of lines read.
func ScanPairs(r io.Reader, name string, fn func(line int64, a, b []byte, extra bool) error) (int64, error) {
	return scan(r, name, (*lineFields).check, func(line int64, f *lineFields) error { return fn(line, f.tok[0], f.tok[1], f.n > 2) })
}

// ScanTriples is ScanPairs that also passes the third field (nil when the
// line has only two); further columns are ignored.
func ScanTriples(r io.Reader, name string, fn func(line int64, a, b, c []byte) error) (int64, error) {
	return scan(r, name, (*lineFields).check, func(line int64, f *lineFields) error {
		var c []byte
		if f.n > 2 {
			c = f.tok[2]
		}
		return fn(line, f.tok[0], f.tok[1], c)
	})
}

// scan is the serial reader behind ScanPairs, ScanTriples and ScanLabels:
// check turns a data line into its error message ("" if it is valid).
func scan(r io.Reader, name string, check func(*lineFields) string, fn func(line int64, f *lineFields) error) (int64, error) {
	br := &blockReader{r: r}
	var buf []byte
	var n int64
	var f lineFields
	for size := min(64<<10, parseBlockSize); ; size = min(2*size, parseBlockSize) {
		data, rerr := br.next(buf, size)
		for i := 0; i < len(data); {
			i = nextLine(data, i, &f)
			n++
			if f.n == 0 && f.msg == "" {
				continue
			}
			if msg := check(&f); msg != "" {
				return n, &LineError{name, n, msg}
			}
			if err := fn(n, &f); err != nil {
				var le *LineError
				if errors.As(err, &le) {
					return n, err
				}
				return n, &LineError{name, n, err.Error()}
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, readError(name, n, rerr)
		}
		buf = data[:0]
	}
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// ScanLabels reads a node-list file: one node label a line, with the line
// syntax of Parse (comments, blank lines, byte-order mark, line ends). A
// line with more than one field is an error naming the file and line. fn
// gets the 1-based line number and the label (valid only during the call);
// an error it returns is wrapped as a *LineError for that line.
func ScanLabels(r io.Reader, name string, fn func(line int64, label []byte) error) (int64, error) {
	one := func(f *lineFields) string {
		if f.msg != "" {
			return f.msg
		}
		if f.n != 1 {
			return fmt.Sprintf("expected one node label, found %d fields", f.n)
		}
		return ""
	}
	return scan(r, name, one, func(line int64, f *lineFields) error { return fn(line, f.tok[0]) })
}
