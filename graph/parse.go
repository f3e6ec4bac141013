package graph

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"
)

// Parallel parsing. A reader goroutine cuts the (decompressed) stream into
// blocks of whole lines; workers tokenize blocks in parallel into edges whose
// endpoints are keys (a decimal label's value, or an index into the block's
// own table of distinct other labels, in order of first appearance in the
// block); one merger takes the blocks in stream order and replaces keys by
// global ids, assigning new ids in order of first appearance, exactly as a
// serial pass over the file would. Line numbers in errors are the block's
// local line plus the lines of all blocks before it.

// parseBlockSize is the size of the blocks parsed in parallel (a variable so
// tests can cut tiny inputs into many blocks).
var parseBlockSize = 4 << 20

const (
	// strKey marks a key as an index into the block's label table; other keys
	// are the value of a canonical decimal label below 2^31.
	strKey = 1 << 31
	// denseLimit bounds the decimal labels looked up in a dense table; larger
	// ones go to a map.
	denseLimit = 1 << 25
)

// block is a worker's result for one block of lines (inBlocks).
type block struct {
	lines      int64
	edges      []Edge   // endpoints are keys until merged
	strs       []string // distinct non-decimal labels, aliasing the block's bytes
	extraLines int64
	firstExtra int64 // block-local line number
	errLine    int64 // block-local line of the first syntax error, 0 if none
	errMsg     string
}

// parser is the per-worker tokenizer state.
type parser struct {
	local map[string]uint32
}

// parseBlock tokenizes data into b, stopping at the first syntax error.
func (p *parser) parseBlock(data []byte, b *block) {
	clear(p.local)
	edges := b.edges[:0]
	if cap(edges) == 0 {
		edges = make([]Edge, 0, len(data)/12+16)
	}
	strs := b.strs[:0]
	var f lineFields
	var line int64
	key := func(tok []byte) uint32 {
		if v, ok := decimal(tok); ok {
			return v
		}
		if k, ok := p.local[unsafe.String(unsafe.SliceData(tok), len(tok))]; ok {
			return k
		}
		s := unsafe.String(unsafe.SliceData(tok), len(tok))
		k := uint32(len(strs)) | strKey
		p.local[s] = k
		strs = append(strs, s)
		return k
	}
	for i := 0; i < len(data); {
		i = nextLine(data, i, &f)
		line++
		if f.n == 0 && f.msg == "" {
			continue
		}
		if msg := f.check(); msg != "" {
			b.errLine, b.errMsg = line, msg
			break
		}
		if f.n > 2 {
			if b.extraLines == 0 {
				b.firstExtra = line
			}
			b.extraLines++
		}
		u := key(f.tok[0])
		v := key(f.tok[1])
		edges = append(edges, Edge{int32(u), int32(v)})
	}
	b.lines, b.edges, b.strs = line, edges, strs
}

// decimal reports whether tok is a canonical decimal (no sign, no leading
// zero) below 2^31, and its value.
func decimal(tok []byte) (uint32, bool) {
	if len(tok) == 0 || len(tok) > 10 || (tok[0] == '0' && len(tok) > 1) {
		return 0, false
	}
	var v uint64
	for _, c := range tok {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + uint64(d)
	}
	if v >= strKey {
		return 0, false
	}
	return uint32(v), true
}

// arena stores label bytes in large blocks so that a million labels are not
// a million allocations. Strings point into blocks that are never modified.
type arena struct{ cur []byte }

func (a *arena) grow(n int) {
	if cap(a.cur)-len(a.cur) < n {
		a.cur = make([]byte, 0, max(n, 1<<20))
	}
}

func (a *arena) str(b []byte) string {
	a.grow(len(b))
	start := len(a.cur)
	a.cur = append(a.cur, b...)
	return unsafe.String(&a.cur[start], len(b))
}

func (a *arena) decimal(v uint32) string {
	a.grow(10)
	start := len(a.cur)
	a.cur = strconv.AppendUint(a.cur, uint64(v), 10)
	return unsafe.String(&a.cur[start], len(a.cur)-start)
}

// merger assigns global ids in order of first appearance.
type merger struct {
	labels  []string
	dense   []int32 // dense[v] = id+1 of decimal label v (0: not seen)
	sparse  map[uint32]int32
	strings map[string]int32
	remap   []int32
	arena   arena
}

var errTooMany = errors.New("more than 2^31-1 distinct node labels")

func (m *merger) newID(label string) (int32, error) {
	if len(m.labels) == 1<<31-1 {
		return 0, errTooMany
	}
	m.labels = append(m.labels, label)
	return int32(len(m.labels) - 1), nil
}

// resolve maps one key of block b to its global id.
func (m *merger) resolve(b *block, k uint32) (int32, error) {
	if k&strKey != 0 {
		i := k &^ strKey
		if id := m.remap[i]; id >= 0 {
			return id, nil
		}
		s := b.strs[i]
		id, ok := m.strings[s]
		if !ok {
			var err error
			if id, err = m.newID(m.arena.str(unsafe.Slice(unsafe.StringData(s), len(s)))); err != nil {
				return 0, err
			}
			m.strings[m.labels[id]] = id
		}
		m.remap[i] = id
		return id, nil
	}
	if k < denseLimit {
		if int(k) >= len(m.dense) {
			n := max(int(k)+1, 2*len(m.dense), 1024)
			m.dense = append(m.dense, make([]int32, min(n, denseLimit)-len(m.dense))...)
		}
		if id := m.dense[k]; id > 0 {
			return id - 1, nil
		}
		id, err := m.newID(m.arena.decimal(k))
		if err != nil {
			return 0, err
		}
		m.dense[k] = id + 1
		return id, nil
	}
	if id, ok := m.sparse[k]; ok {
		return id, nil
	}
	id, err := m.newID(m.arena.decimal(k))
	if err != nil {
		return 0, err
	}
	m.sparse[k] = id
	return id, nil
}

// merge rewrites b's edges to global ids.
func (m *merger) merge(b *block) error {
	if cap(m.remap) < len(b.strs) {
		m.remap = make([]int32, len(b.strs), max(len(b.strs), 2*cap(m.remap)))
	}
	m.remap = m.remap[:len(b.strs)]
	for i := range m.remap {
		m.remap[i] = -1
	}
	for i := range b.edges {
		e := &b.edges[i]
		u, err := m.resolve(b, uint32(e.U))
		if err != nil {
			return err
		}
		v, err := m.resolve(b, uint32(e.V))
		if err != nil {
			return err
		}
		e.U, e.V = u, v
	}
	b.strs = nil
	return nil
}

// parseEdges reads the whole stream and returns the edges (in blocks, global
// ids) and the labels: blocks are tokenized on all cores and merged in
// stream order (inBlocks).
func parseEdges(r io.Reader, name string, rep *ReadReport) ([][]Edge, []string, error) {
	m := &merger{sparse: make(map[uint32]int32), strings: make(map[string]int32)}
	var chunks [][]Edge
	var lines int64
	var err error
	inBlocks(r, func() func([]byte, *block) {
		p := &parser{local: make(map[string]uint32)}
		return p.parseBlock
	}, func(_ []byte, rerr error, b *block) bool {
		if b.errLine > 0 {
			rep.Lines = lines + b.errLine
			err = &LineError{name, lines + b.errLine, b.errMsg}
			return false
		}
		if b.extraLines > 0 {
			if rep.ExtraColumnLines == 0 {
				rep.FirstExtraColumn = lines + b.firstExtra
			}
			rep.ExtraColumnLines += b.extraLines
		}
		if err = m.merge(b); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
			return false
		}
		lines += b.lines
		rep.EdgeLines += int64(len(b.edges))
		if len(b.edges) > 0 {
			chunks = append(chunks, b.edges)
		}
		if rerr != nil && rerr != io.EOF {
			err = readError(name, lines, rerr)
		}
		return rerr == nil
	})
	rep.Lines = max(rep.Lines, lines)
	if err != nil {
		return nil, nil, err
	}
	return chunks, m.labels, nil
}
