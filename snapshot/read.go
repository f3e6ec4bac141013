package snapshot

import (
	"errors"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"
)

// Reading a snapshot file. Load reads a regular file with several positioned
// reads at once (one range of the file per core), each range in pieces that
// are checksummed right after they are read, while they are still in the
// core's cache; the ranges' CRC-32C are then combined into the payload's
// (crc32Combine). This takes the kernel's copy and the checksum off one core
// (os.ReadFile, then crc32.Checksum over the whole payload from memory). The
// bytes and the checksum are exactly those os.ReadFile and crc32.Checksum
// give: a file that is not regular or not longer than the header, or whose
// size changes while it is read, is read (again) by os.ReadFile, and its
// checksum left to Decode.

const (
	readPiece    = 512 << 10 // bytes read, then checksummed, at a time
	parallelRead = 8 << 20   // smaller files are read by one goroutine
)

// readHook, when set (by tests), runs between the size and the reads.
var readHook func()

// readFile returns the content of the file at path and, when crcOK, the
// CRC-32C (Castagnoli) of its bytes from headerSize on.
func readFile(path string) (data []byte, crc uint32, crcOK bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= headerSize || int64(int(st.Size())) != st.Size() {
		data, err := os.ReadFile(path)
		return data, 0, false, err
	}
	size := int(st.Size())
	data = make([]byte, size)
	if readHook != nil {
		readHook()
	}
	workers := 1
	if size >= parallelRead {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	// Range w is [cuts[w], cuts[w+1]); the checksum of each covers its bytes
	// from headerSize on (range 0 starts at the header).
	cuts := make([]int, workers+1)
	for w := 1; w < workers; w++ {
		cuts[w] = headerSize + (size-headerSize)/workers*w
	}
	cuts[workers] = size
	crcs := make([]uint32, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		read := func() {
			crcs[w], errs[w] = readRange(f, data, cuts[w], cuts[w+1])
		}
		if w == workers-1 {
			read()
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); read() }()
	}
	wg.Wait()
	var one [1]byte
	n, extraErr := f.ReadAt(one[:], int64(size))
	if err := errors.Join(errs...); err != nil || n != 0 || extraErr != io.EOF {
		// Shorter or longer than when it was opened, or unreadable so:
		// read it again the usual way (which reports the errors).
		data, err := os.ReadFile(path)
		return data, 0, false, err
	}
	crc = crcs[0]
	for w := 1; w < workers; w++ {
		crc = crc32Combine(crc, crcs[w], int64(cuts[w+1]-cuts[w]))
	}
	return data, crc, true, nil
}

// readRange reads bytes [lo, hi) of f into data[lo:hi] and returns the
// CRC-32C of those from headerSize on.
func readRange(f *os.File, data []byte, lo, hi int) (uint32, error) {
	crc := uint32(0)
	for p := lo; p < hi; {
		q := min(p+readPiece, hi)
		if _, err := f.ReadAt(data[p:q], int64(p)); err != nil {
			return 0, err
		}
		crc = crc32.Update(crc, castagnoli, data[max(p, headerSize):q])
		p = q
	}
	return crc, nil
}

// crc32Combine returns the CRC-32C of a||b given crcA of a, crcB of b, and
// the length of b (zlib's crc32_combine, as in zlib 1.2.12 and later): the
// CRC of a with lenB zero bytes appended is crcA times x^(8 lenB) modulo the
// polynomial (the pre- and post-conditioning of the two CRCs cancel), and
// appending b's bytes instead adds crcB.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	return gfMul(xPow8n(lenB), crcA) ^ crcB
}

// castagnoliPoly is the Castagnoli polynomial, bit-reversed (bit 31 is x^0),
// as hash/crc32 uses it.
const castagnoliPoly = 0x82f63b78

// gfMul multiplies a and b modulo the polynomial, both bit-reversed.
func gfMul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		b = b>>1 ^ castagnoliPoly&-(b&1)
	}
	return p
}

// xPow8n returns x^(8n) modulo the polynomial: repeated squaring from x^8.
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	sq := uint32(1) << (31 - 8)
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			p = gfMul(sq, p)
		}
		sq = gfMul(sq, sq)
	}
	return p
}
