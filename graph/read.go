package graph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
			return nil, nil, fmt.Errorf("%s: not a valid gzip file: %w", path, err)
		}
		return zr, closers{zr, f}, nil
	case strings.HasSuffix(path, ".zst"):
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

// Parse reads an edge list: one pair per line, separated by whitespace or
// commas; lines starting with '#' or '%' and blank lines are skipped; columns
// after the second (weights) are ignored and counted. Labels are arbitrary
// strings mapped to dense ids in order of first appearance. name is used in
// error messages, which name the line and the problem.
func Parse(r io.Reader, name string) (*Graph, *ReadReport, error) {
	rep := &ReadReport{Name: name}
	index := make(map[string]int32)
	var labels []string
	var edges []Edge
	id := func(tok []byte) (int32, error) {
		if v, ok := index[string(tok)]; ok {
			return v, nil
		}
		if len(labels) == 1<<31-1 {
			return 0, errors.New("more than 2^31-1 distinct node labels")
		}
		s := string(tok)
		v := int32(len(labels))
		index[s] = v
		labels = append(labels, s)
		return v, nil
	}
	lines, err := ScanPairs(r, name, func(line int64, a, b []byte, extra bool) error {
		if extra {
			if rep.ExtraColumnLines == 0 {
				rep.FirstExtraColumn = line
			}
			rep.ExtraColumnLines++
		}
		x, err := id(a)
		if err != nil {
			return err
		}
		y, err := id(b)
		if err != nil {
			return err
		}
		rep.EdgeLines++
		edges = append(edges, Edge{x, y})
		return nil
	})
	rep.Lines = lines
	if err != nil {
		return nil, rep, err
	}
	if len(edges) == 0 {
		return nil, rep, fmt.Errorf("%s: %w (no edge lines in %d lines)", name, ErrEmpty, rep.Lines)
	}
	g, st, err := FromEdges(len(labels), edges, labels)
	rep.BuildStats = st
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			return nil, rep, fmt.Errorf("%s: %w (every line was a self-loop)", name, ErrEmpty)
		}
		return nil, rep, fmt.Errorf("%s: %w", name, err)
	}
	g.index = index
	return g, rep, nil
}

// ScanPairs reads a pair-per-line text file with the edge-list syntax of
// Parse and calls fn with the 1-based line number, the first two fields
// (valid only during the call) and whether more columns followed. An error
// returned by fn is wrapped as a *LineError for that line. It returns the
// number of lines read.
func ScanPairs(r io.Reader, name string, fn func(line int64, a, b []byte, extra bool) error) (int64, error) {
	return scan(r, name, func(line int64, a, b, c []byte, more bool) error { return fn(line, a, b, c != nil) })
}

// ScanTriples is ScanPairs that also passes the third field (nil when the
// line has only two); further columns are ignored.
func ScanTriples(r io.Reader, name string, fn func(line int64, a, b, c []byte) error) (int64, error) {
	return scan(r, name, func(line int64, a, b, c []byte, _ bool) error { return fn(line, a, b, c) })
}

func scan(r io.Reader, name string, fn func(line int64, a, b, c []byte, more bool) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	var n int64
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			n++
			if perr := scanLine(line, n, name, fn); perr != nil {
				return n, perr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: read error after line %d: %w", name, n, err)
		}
	}
}

func isSep(c byte) bool {
	return c == ' ' || c == '\t' || c == ',' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// scanLine handles one line; fields are runs of non-separator bytes.
func scanLine(line []byte, n int64, name string, fn func(int64, []byte, []byte, []byte, bool) error) error {
	i := 0
	for i < len(line) && isSep(line[i]) {
		i++
	}
	if i == len(line) || line[i] == '#' || line[i] == '%' {
		return nil
	}
	var tok [3][]byte
	k := 0
	for i < len(line) {
		j := i
		for j < len(line) && !isSep(line[j]) {
			j++
		}
		if k < 3 {
			tok[k] = line[i:j]
		}
		k++
		for j < len(line) && isSep(line[j]) {
			j++
		}
		i = j
	}
	if k < 2 {
		return &LineError{name, n, fmt.Sprintf("expected two node labels, found one field %q", clip(tok[0]))}
	}
	if bytes.IndexByte(tok[0], 0) >= 0 || bytes.IndexByte(tok[1], 0) >= 0 {
		return &LineError{name, n, "NUL byte in a node label (binary file?)"}
	}
	if err := fn(n, tok[0], tok[1], tok[2], k > 3); err != nil {
		var le *LineError
		if errors.As(err, &le) {
			return err
		}
		return &LineError{name, n, err.Error()}
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
