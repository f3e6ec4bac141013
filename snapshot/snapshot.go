// Package snapshot stores a graph (CSR arrays and labels) and optionally its
// protection marks in one binary file that loads in a single read, far faster
// than parsing the edge list again.
//
// File layout (version 1; all integers little-endian):
//
//	offset  size  field
//	0       8     magic "\x89DPLPG\r\n"
//	8       4     format version (1)
//	12      4     flags: bit 0 labels stored, bit 1 protection marks stored,
//	              bit 2 the marks are synthetic (drawn from the graph: a
//	              simulation, refused by deployment commands)
//	16      8     N, the number of nodes
//	24      8     adjacency entries (2 x edges)
//	32      8     bytes of the label section (0 without labels)
//	40      8     protection-mark entries (2 x protected pairs; 0 without marks)
//	48      8     self-loops dropped when the graph was built
//	56      8     repeated or reciprocal lines merged when it was built
//	64      8     payload length in bytes
//	72      4     CRC-32C (Castagnoli) of the payload
//	76      4     CRC-32C of header bytes 0..75
//	80      ...   payload: sections, each padded with zeros to a multiple of 8:
//	              graph offsets (N+1 x int64), adjacency (int32 each),
//	              labels (per node: uvarint length, then the label's bytes),
//	              mark offsets (N+1 x int64) and mark lists (int32 each).
//
// Without labels, node labels are the decimal ids (the writer omits labels
// that equal them). Node ids are canonical (graph.CompareLabels order); a
// file written before numbering was canonical is renumbered when loaded,
// marks with it, so every path sees the same ids for the same labels. Loading verifies magic, version, both checksums, that
// the sizes match the file, and every structural invariant of graph.Graph and
// protect.Set (graph.FromCSR, protect.FromCSR); any failure is an error
// naming the file, never a panic.
package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"unsafe"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/protect"
)

// Magic starts every snapshot file. Its first byte is not ASCII, so no text
// edge list starts with it.
const Magic = "\x89DPLPG\r\n"

// Version is the format version this package writes and reads.
const Version = 1

const (
	headerSize = 80
	flagLabels = 1 << 0
	flagMarks  = 1 << 1
	flagSynth  = 1 << 2
	knownFlags = flagLabels | flagMarks | flagSynth
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Snapshot is the content of a snapshot file.
type Snapshot struct {
	Graph *graph.Graph
	Marks *protect.Set     // nil when the file stores no protection marks
	Build graph.BuildStats // what building the graph from its edge list dropped and merged
	// SyntheticMarks reports that Marks were drawn from the graph itself
	// (`dplp convert --sigma`): a simulation that carries no guarantee, which
	// deployment commands refuse.
	SyntheticMarks bool
}

// ErrNotSnapshot is returned by Decode when the data does not start with Magic.
var ErrNotSnapshot = errors.New("not a dplp snapshot (bad magic bytes)")

// IsSnapshot reports whether the file at path starts with Magic.
func IsSnapshot(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [len(Magic)]byte
	n, err := io.ReadFull(f, b[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, err
	}
	return n == len(Magic) && string(b[:]) == Magic, nil
}

type header struct {
	version, flags               uint32
	nodes, adj, labelBytes, mark uint64
	selfLoops, dups              uint64
	payloadLen                   uint64
	payloadCRC                   uint32
}

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, Magic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], h.version)
	le.PutUint32(b[12:], h.flags)
	le.PutUint64(b[16:], h.nodes)
	le.PutUint64(b[24:], h.adj)
	le.PutUint64(b[32:], h.labelBytes)
	le.PutUint64(b[40:], h.mark)
	le.PutUint64(b[48:], h.selfLoops)
	le.PutUint64(b[56:], h.dups)
	le.PutUint64(b[64:], h.payloadLen)
	le.PutUint32(b[72:], h.payloadCRC)
	le.PutUint32(b[76:], crc32.Checksum(b[:76], castagnoli))
	return b
}

func pad8(n uint64) uint64 { return (n + 7) &^ 7 }

// payloadLen is the payload size the counts imply, or false on overflow
// beyond limit.
func (h *header) expectedPayload(limit uint64) (uint64, bool) {
	// Every count is bounded by limit before multiplying, so nothing overflows.
	if h.nodes >= limit || h.adj > limit || h.labelBytes > limit || h.mark > limit {
		return 0, false
	}
	n := pad8((h.nodes+1)*8) + pad8(h.adj*4)
	if h.flags&flagLabels != 0 {
		n += pad8(h.labelBytes)
	}
	if h.flags&flagMarks != 0 {
		n += pad8((h.nodes+1)*8) + pad8(h.mark*4)
	}
	return n, true
}

// littleEndian is whether this machine stores integers little-endian, so
// that sections can be used in place.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// Write writes a snapshot of s.Graph, its build statistics and, when
// s.Marks is not nil, the protection marks (on the same nodes) and whether
// they are synthetic.
func Write(w io.Writer, s *Snapshot) error {
	g, marks, build := s.Graph, s.Marks, s.Build
	n := g.N()
	if s.SyntheticMarks && marks == nil {
		return errors.New("snapshot: synthetic marks flagged without marks")
	}
	if marks != nil && marks.N() != n {
		return fmt.Errorf("snapshot: marks on %d nodes for a graph of %d", marks.N(), n)
	}
	var sections [][]byte
	add := func(b []byte) {
		sections = append(sections, b)
		if p := pad8(uint64(len(b))) - uint64(len(b)); p > 0 {
			sections = append(sections, make([]byte, p))
		}
	}
	h := header{version: Version, nodes: uint64(n), adj: uint64(len(g.Adj)),
		selfLoops: uint64(build.SelfLoopsDropped), dups: uint64(build.DuplicatesMerged)}
	add(int64Bytes(g.Off))
	add(int32Bytes(g.Adj))
	if labels := g.Labels(); labels != nil && !decimalIDs(labels) {
		var blob []byte
		for _, l := range labels {
			blob = binary.AppendUvarint(blob, uint64(len(l)))
			blob = append(blob, l...)
		}
		h.flags |= flagLabels
		h.labelBytes = uint64(len(blob))
		add(blob)
	}
	if marks != nil {
		off := make([]int64, n+1)
		adj := make([]int32, 0, 2*marks.Len())
		for w := 0; w < n; w++ {
			adj = append(adj, marks.Of(int32(w))...)
			off[w+1] = int64(len(adj))
		}
		h.flags |= flagMarks
		if s.SyntheticMarks {
			h.flags |= flagSynth
		}
		h.mark = uint64(len(adj))
		add(int64Bytes(off))
		add(int32Bytes(adj))
	}
	crc := uint32(0)
	for _, s := range sections {
		crc = crc32.Update(crc, castagnoli, s)
		h.payloadLen += uint64(len(s))
	}
	h.payloadCRC = crc
	if _, err := w.Write(h.encode()); err != nil {
		return err
	}
	for _, s := range sections {
		if _, err := w.Write(s); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes a snapshot to path atomically (internal/atomicfile: a
// temporary file in the same directory, fsync, rename, directory sync). A
// target that exists and is not a regular file (a symbolic link, device,
// directory or pipe) is never replaced: that is an error.
func WriteFile(path string, s *Snapshot) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Write(w, s) })
}

// decimalIDs reports whether labels[i] is the decimal form of i for every i.
func decimalIDs(labels []string) bool {
	var buf []byte
	for i, l := range labels {
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		if string(buf) != l {
			return false
		}
	}
	return true
}

func int64Bytes(s []int64) []byte {
	if len(s) == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 8*len(s))
	}
	b := make([]byte, 8*len(s))
	for i, x := range s {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func int32Bytes(s []int32) []byte {
	if len(s) == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
	}
	b := make([]byte, 4*len(s))
	for i, x := range s {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// Load reads and verifies the snapshot at path. It is Decode of the file's
// content, read with the payload's checksum computed as it is read
// (readFile).
func Load(path string) (*Snapshot, error) {
	data, crc, crcOK, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if !crcOK {
		return Decode(data, path)
	}
	return decode(data, path, &crc)
}

// Decode verifies and decodes a snapshot held in data; name is used in
// error messages. On little-endian machines the result aliases data, which
// must not be modified afterwards.
func Decode(data []byte, name string) (*Snapshot, error) {
	return decode(data, name, nil)
}

// decode is Decode; payloadCRC, when not nil, is the CRC-32C of
// data[headerSize:] (computed while the file was read), and otherwise it is
// computed here, beside the checks.
func decode(data []byte, name string, payloadCRC *uint32) (*Snapshot, error) {
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		if len(data) > 0 && len(data) < len(Magic) && string(data) == Magic[:len(data)] {
			return nil, fmt.Errorf("%s: truncated snapshot (%d bytes; the header has %d)", name, len(data), headerSize)
		}
		return nil, fmt.Errorf("%s: %w", name, ErrNotSnapshot)
	}
	le := binary.LittleEndian
	if len(data) < 12 {
		return nil, fmt.Errorf("%s: truncated snapshot (%d bytes; the header has %d)", name, len(data), headerSize)
	}
	if v := le.Uint32(data[8:]); v != Version {
		return nil, fmt.Errorf("%s: snapshot format version %d; this dplp reads version %d (re-create the file with dplp convert)", name, v, Version)
	}
	if len(data) < headerSize {
		return nil, fmt.Errorf("%s: truncated snapshot (%d bytes; the header has %d)", name, len(data), headerSize)
	}
	if crc32.Checksum(data[:76], castagnoli) != le.Uint32(data[76:]) {
		return nil, fmt.Errorf("%s: corrupted snapshot: header checksum mismatch", name)
	}
	h := header{
		version: Version, flags: le.Uint32(data[12:]),
		nodes: le.Uint64(data[16:]), adj: le.Uint64(data[24:]), labelBytes: le.Uint64(data[32:]), mark: le.Uint64(data[40:]),
		selfLoops: le.Uint64(data[48:]), dups: le.Uint64(data[56:]), payloadLen: le.Uint64(data[64:]), payloadCRC: le.Uint32(data[72:]),
	}
	if h.flags&flagSynth != 0 && h.flags&flagMarks == 0 {
		return nil, fmt.Errorf("%s: corrupted snapshot: synthetic-marks flag without marks", name)
	}
	if h.flags&^knownFlags != 0 {
		return nil, fmt.Errorf("%s: corrupted snapshot: unknown flags %#x", name, h.flags)
	}
	if h.nodes == 0 || h.nodes > 1<<31-1 {
		return nil, fmt.Errorf("%s: corrupted snapshot: %d nodes", name, h.nodes)
	}
	if h.selfLoops > 1<<62 || h.dups > 1<<62 {
		return nil, fmt.Errorf("%s: corrupted snapshot: build statistics out of range", name)
	}
	want, ok := h.expectedPayload(1 << 56)
	if !ok || want != h.payloadLen || h.flags&flagLabels == 0 && h.labelBytes != 0 || h.flags&flagMarks == 0 && h.mark != 0 {
		return nil, fmt.Errorf("%s: corrupted snapshot: header sizes are inconsistent", name)
	}
	have := uint64(len(data) - headerSize)
	if have < h.payloadLen {
		return nil, fmt.Errorf("%s: truncated snapshot (%d of %d bytes)", name, len(data), headerSize+h.payloadLen)
	}
	if have > h.payloadLen {
		return nil, fmt.Errorf("%s: corrupted snapshot: %d bytes after the end of the data", name, have-h.payloadLen)
	}
	payload := data[headerSize:]
	// The payload checksum, unless it was computed as the file was read,
	// runs beside the decoding and the graph's checks (which read only this
	// buffer and reject any malformed content, so they are safe on data
	// that then fails the checksum); no result and no other error is
	// returned before it has matched: a mismatch is always reported as such.
	crcMatch := make(chan bool, 1)
	switch {
	case payloadCRC == nil:
		go func(p []byte) { crcMatch <- crc32.Checksum(p, castagnoli) == h.payloadCRC }(payload)
	case *payloadCRC != h.payloadCRC:
		return nil, fmt.Errorf("%s: corrupted snapshot: payload checksum mismatch", name)
	default:
		crcMatch <- true
	}
	crcKnown, crcOK := false, false
	checksum := func() bool {
		if !crcKnown {
			crcOK, crcKnown = <-crcMatch, true
		}
		return crcOK
	}
	corrupted := func(format string, args ...any) (*Snapshot, error) {
		if !checksum() {
			return nil, fmt.Errorf("%s: corrupted snapshot: payload checksum mismatch", name)
		}
		return nil, fmt.Errorf(format, args...)
	}
	aligned := uintptr(unsafe.Pointer(unsafe.SliceData(payload)))%8 == 0
	next := func(size uint64) []byte {
		s := payload[:size]
		payload = payload[pad8(size):]
		return s
	}
	n := int(h.nodes)
	off := int64s(next(uint64(n+1)*8), aligned)
	adj := int32s(next(h.adj*4), aligned)
	var labels []string
	if h.flags&flagLabels != 0 {
		var err error
		if labels, err = decodeLabels(next(h.labelBytes), n); err != nil {
			return corrupted("%s: corrupted snapshot: %v", name, err)
		}
	}
	if len(adj) == 0 {
		return corrupted("%s: corrupted snapshot: %w", name, graph.ErrEmpty)
	}
	g, err := graph.FromCSR(off, adj, labels)
	if err != nil {
		return corrupted("%s: corrupted snapshot: %v", name, err)
	}
	if !checksum() {
		return nil, fmt.Errorf("%s: corrupted snapshot: payload checksum mismatch", name)
	}
	s := &Snapshot{Graph: g, Build: graph.BuildStats{SelfLoopsDropped: int64(h.selfLoops), DuplicatesMerged: int64(h.dups)},
		SyntheticMarks: h.flags&flagSynth != 0}
	if h.flags&flagMarks != 0 {
		moff := int64s(next(uint64(n+1)*8), aligned)
		madj := int32s(next(h.mark*4), aligned)
		if s.Marks, err = protect.FromCSR(moff, madj); err != nil {
			return nil, fmt.Errorf("%s: corrupted snapshot: %v", name, err)
		}
	}
	// Files written before numbering was canonical: renumber, marks too.
	if cg, rank := graph.Canonical(s.Graph); rank != nil {
		s.Graph = cg
		if s.Marks != nil {
			if s.Marks, err = s.Marks.Renumber(cg.N(), rank); err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
		}
	}
	return s, nil
}

func int64s(b []byte, inPlace bool) []int64 {
	n := len(b) / 8
	if n == 0 {
		return []int64{}
	}
	if littleEndian && inPlace {
		return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), n)
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return s
}

func int32s(b []byte, inPlace bool) []int32 {
	n := len(b) / 4
	if n == 0 {
		return []int32{}
	}
	if littleEndian && inPlace {
		return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), n)
	}
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return s
}

// decodeLabels splits the label section into n strings aliasing it.
func decodeLabels(b []byte, n int) ([]string, error) {
	labels := make([]string, n)
	for i := range labels {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("label %d overruns the label section", i)
		}
		b = b[k:]
		labels[i] = unsafe.String(unsafe.SliceData(b), int(l))
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d stray bytes after the labels", len(b))
	}
	return labels, nil
}
