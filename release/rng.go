package release

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/randx"
)

// UserRNG returns the generator of one user's release in a seeded run: a
// ChaCha8 stream keyed by HMAC-SHA256(key = "dplp/release/v1" || seed,
// message = label || 0 || stream). Each user's draws depend only on the
// seed, the user's label and the stream number (0 for the first fresh list
// of a run), never on which worker or in which order users are released, so
// a seeded run gives byte-identical output at any GOMAXPROCS and any
// partitioning of users (the Beam pipeline relies on this). Seeded runs are
// reproducible and NOT for deployment; deployment uses randx.Crypto.
func UserRNG(seed uint64, label string, stream uint64) *rand.Rand {
	var key [24]byte
	copy(key[:16], "dplp/release/v1\x00")
	binary.LittleEndian.PutUint64(key[16:], seed)
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte(label))
	var tail [9]byte
	binary.LittleEndian.PutUint64(tail[1:], stream)
	mac.Write(tail[:])
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	return rand.New(rand.NewChaCha8(k))
}

// seededRNG is one worker's reusable UserRNG: the keyed HMAC (reset, not
// rebuilt, for each user) and one ChaCha8 generator re-seeded per user.
// get returns exactly the generator UserRNG(seed, label, stream) returns
// (the same key, so the same stream), valid until the next get.
type seededRNG struct {
	seed  uint64
	mac   hash.Hash
	src   *rand.ChaCha8
	rng   *rand.Rand
	label []byte
	sum   []byte
}

func (s *seededRNG) get(seed uint64, label string, stream uint64) *rand.Rand {
	if s.mac == nil || s.seed != seed {
		var key [24]byte
		copy(key[:16], "dplp/release/v1\x00")
		binary.LittleEndian.PutUint64(key[16:], seed)
		s.seed, s.mac = seed, hmac.New(sha256.New, key[:])
		s.src = rand.NewChaCha8([32]byte{})
		s.rng = rand.New(s.src)
	} else {
		s.mac.Reset()
	}
	s.label = append(s.label[:0], label...)
	s.mac.Write(s.label)
	var tail [9]byte
	binary.LittleEndian.PutUint64(tail[1:], stream)
	s.mac.Write(tail[:])
	s.sum = s.mac.Sum(s.sum[:0])
	var k [32]byte
	copy(k[:], s.sum)
	s.src.Seed(k)
	return s.rng
}

// rngFor picks user u's generator: per-user PRF of u's label when seeded
// (through the worker's reusable sr), else the worker's crypto-seeded
// generator.
func rngFor(seed *uint64, g *graph.Graph, u int32, stream uint64, crypto *rand.Rand, sr *seededRNG) *rand.Rand {
	if seed != nil {
		return sr.get(*seed, g.Label(u), stream)
	}
	if crypto == nil {
		return randx.Crypto()
	}
	return crypto
}
