package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/dplp/dplp/graph"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	// Local files; the driver (cmd/dplp-beam, also the workers' binary)
	// registers gs:// and s3:// too.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
)

// Reading. An edge or marks file is cut into byte ranges ("shards") read in
// parallel; every shard starts at the first line start at or after its
// range's first byte and ends at the first line start at or after its last,
// with the line-end rules of graph's line syntax (LF, CRLF or a lone CR), so
// each line is read by exactly one shard. Every data line gets a position
// Pos = shard<<posShardShift | line-within-shard, so ordering by Pos is
// ordering by line in the file; a label's first appearance is the smallest
// 2*Pos+column. Compressed files (.gz, .zst) and files on file systems
// whose readers cannot seek are read as one shard.

const posShardShift = 40 // lines per shard < 2^40; shards < 2^22

// ShardBytes is the size of the byte ranges uncompressed inputs are cut
// into (a variable so tests can cut tiny files into many shards).
var ShardBytes int64 = 64 << 20

// Shard is one byte range of one input file.
type Shard struct {
	Path       string
	Index      int64
	Start, End int64 // byte range; End < 0: the whole (compressed) file
}

// Pair is one data line: its position and its first two fields.
type Pair struct {
	Pos  int64
	A, B string
}

func compressed(path string) bool {
	return strings.HasSuffix(path, ".gz") || strings.HasSuffix(path, ".zst")
}

// planShardsFn cuts a file into shards.
type planShardsFn struct {
	ShardBytes int64
}

func (f *planShardsFn) ProcessElement(ctx context.Context, path string, emit func(Shard)) error {
	if compressed(path) {
		emit(Shard{Path: path, Start: 0, End: -1})
		return nil
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	size, err := fs.Size(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sb := max(f.ShardBytes, 1)
	if size <= sb {
		emit(Shard{Path: path, Start: 0, End: size})
		return nil
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, seekable := rc.(io.ReadSeeker)
	rc.Close()
	if !seekable {
		emit(Shard{Path: path, Start: 0, End: size})
		return nil
	}
	if (size+sb-1)/sb >= 1<<(63-posShardShift-1) {
		return fmt.Errorf("%s: %d bytes is too many shards of %d bytes", path, size, sb)
	}
	for i, lo := int64(0), int64(0); lo < size; i, lo = i+1, lo+sb {
		emit(Shard{Path: path, Index: i, Start: lo, End: min(lo+sb, size)})
	}
	return nil
}

// lineStartAtOrAfter returns the first line start >= p in r (size bytes).
func lineStartAtOrAfter(r io.ReadSeeker, p, size int64) (int64, error) {
	if p <= 0 {
		return 0, nil
	}
	if p >= size {
		return size, nil
	}
	if _, err := r.Seek(p-1, io.SeekStart); err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	prev, err := br.ReadByte()
	if err != nil {
		return 0, err
	}
	pos := p // offset of the next byte br returns
	if prev == '\n' {
		return p, nil
	}
	if prev == '\r' {
		c, err := br.ReadByte()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return 0, err
		}
		if c == '\n' {
			return p + 1, nil // p is the LF of a CRLF
		}
		return p, nil
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return 0, err
		}
		pos++
		switch c {
		case '\n':
			return pos, nil
		case '\r':
			n, err := br.ReadByte()
			if err == io.EOF {
				return pos, nil
			}
			if err != nil {
				return 0, err
			}
			if n == '\n' {
				return pos + 1, nil
			}
			return pos, nil
		}
	}
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// readShardFn reads one shard's data lines with graph.ScanPairs (the line
// syntax of graph.Parse and protect.ReadFile), or with graph.ScanLabels for
// a node list (Labels: one label a line, emitted as Pair.A).
type readShardFn struct {
	Labels bool
}

func (f *readShardFn) ProcessElement(ctx context.Context, sh Shard, emit func(Pair)) error {
	fs, err := filesystem.New(ctx, sh.Path)
	if err != nil {
		return err
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, sh.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", sh.Path, err)
	}
	defer rc.Close()
	var r io.Reader = rc
	name := sh.Path
	switch {
	case strings.HasSuffix(sh.Path, ".gz"):
		zr, err := gzip.NewReader(rc)
		if err != nil {
			return fmt.Errorf("%s: not a valid gzip file: %w", sh.Path, err)
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(sh.Path, ".zst"):
		zr, err := zstd.NewReader(rc)
		if err != nil {
			return fmt.Errorf("%s: not a valid zstd file: %w", sh.Path, err)
		}
		defer zr.Close()
		r = zr
	case sh.Start > 0 || sh.End >= 0:
		rs, ok := rc.(io.ReadSeeker)
		if !ok {
			if sh.Start > 0 {
				return fmt.Errorf("%s: reader cannot seek to shard %d", sh.Path, sh.Index)
			}
			break
		}
		size, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return err
		}
		lo, err := lineStartAtOrAfter(rs, sh.Start, size)
		if err != nil {
			return fmt.Errorf("%s: %w", sh.Path, err)
		}
		hi, err := lineStartAtOrAfter(rs, sh.End, size)
		if err != nil {
			return fmt.Errorf("%s: %w", sh.Path, err)
		}
		if lo >= hi {
			return nil
		}
		if _, err := rs.Seek(lo, io.SeekStart); err != nil {
			return err
		}
		r = io.LimitReader(rs, hi-lo)
		if lo > 0 {
			// ScanPairs skips a byte-order mark at the start of its stream:
			// give it one so that the shard's own bytes are read unchanged.
			r = io.MultiReader(bytes.NewReader(bom), r)
			name = fmt.Sprintf("%s (bytes from %d; line numbers within that part)", sh.Path, lo)
		}
	}
	base := sh.Index << posShardShift
	if f.Labels {
		_, err = graph.ScanLabels(r, name, func(line int64, a []byte) error {
			if line >= 1<<posShardShift {
				return fmt.Errorf("more than 2^%d lines in one shard", posShardShift)
			}
			emit(Pair{Pos: base | line, A: string(a)})
			return nil
		})
		return err
	}
	_, err = graph.ScanPairs(r, name, func(line int64, a, b []byte, _ bool) error {
		if line >= 1<<posShardShift {
			return fmt.Errorf("more than 2^%d lines in one shard", posShardShift)
		}
		emit(Pair{Pos: base | line, A: string(a), B: string(b)})
		return nil
	})
	return err
}

// ReadPairs reads the data lines of the file at path (local, gs:// or
// s3://; .gz and .zst decompressed).
func ReadPairs(s beam.Scope, path string) beam.PCollection {
	s = s.Scope("ReadPairs")
	p := beam.Create(s, path)
	shards := beam.ParDo(s, &planShardsFn{ShardBytes: ShardBytes}, p)
	shards = beam.Reshuffle(s, shards)
	return beam.ParDo(s, &readShardFn{}, shards)
}

func pairLabelA(p Pair) string { return p.A }

// ReadLabels reads a node-list file (one label a line, the line syntax of
// edge lists: comments, blank lines, byte-order mark, LF/CRLF/CR; a line
// with more than one field fails the pipeline naming the line) and returns
// its labels (duplicates kept).
func ReadLabels(s beam.Scope, path string) beam.PCollection {
	s = s.Scope("ReadLabels")
	p := beam.Create(s, path)
	shards := beam.ParDo(s, &planShardsFn{ShardBytes: ShardBytes}, p)
	shards = beam.Reshuffle(s, shards)
	return beam.ParDo(s, pairLabelA, beam.ParDo(s, &readShardFn{Labels: true}, shards))
}

// describePos renders a line position for messages.
func describePos(path string, pos int64) string {
	sh, line := pos>>posShardShift, pos&(1<<posShardShift-1)
	if sh == 0 {
		return fmt.Sprintf("%s:%d", path, line)
	}
	return fmt.Sprintf("%s: shard %d (from byte %d) line %d", path, sh, sh*ShardBytes, line)
}
