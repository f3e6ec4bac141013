package exact

import (
	"encoding/binary"
	"io"
	"math/bits"
)

// Words is a random source that gives uniform 64-bit words and cannot
// fail: the math/rand/v2 generators (*rand.ChaCha8, *rand.Rand) and
// calib.RandReader have it. A reader that is also Words is drawn from
// word by word instead of through Read (the same uniform bits, none
// buffered or discarded).
type Words interface {
	Uint64() uint64
}

// src turns an io.Reader into uniform random words. It buffers what it
// reads; leftovers are discarded when the workspace is reset for another
// call, so no bits are shared between calls or readers. A reader that is
// Words is asked for each word instead.
type src struct {
	r   io.Reader
	w   Words
	buf [512]byte
	pos int
	n   int
	err error
}

func (s *src) reset(r io.Reader) {
	s.r, s.pos, s.n, s.err = r, 0, 0, nil
	s.w, _ = r.(Words)
}

// u64 returns 64 uniform bits. After a read error it returns 0 and records
// the error; callers check s.err once per proposal (every loop terminates
// on all-zero words).
func (s *src) u64() uint64 {
	if s.w != nil {
		return s.w.Uint64()
	}
	if s.pos+8 > s.n {
		if s.err != nil {
			return 0
		}
		n, err := io.ReadFull(s.r, s.buf[:])
		if err != nil {
			s.err = err
			return 0
		}
		s.pos, s.n = 0, n
	}
	v := binary.LittleEndian.Uint64(s.buf[s.pos:])
	s.pos += 8
	return v
}

// below returns a uniform integer in [0, n), n >= 1, by rejection from
// the smallest covering power of two (exact; fewer than 2 words expected).
func (s *src) below(n uint64) uint64 {
	if n&(n-1) == 0 {
		return s.u64() & (n - 1)
	}
	mask := ^uint64(0) >> bits.LeadingZeros64(n-1)
	for {
		v := s.u64() & mask
		if v < n || s.err != nil {
			return v % n
		}
	}
}
