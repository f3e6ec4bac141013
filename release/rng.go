package release

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
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

// rngFor picks user u's generator: per-user PRF of u's label when seeded,
// else the worker's crypto-seeded generator.
func rngFor(seed *uint64, g *graph.Graph, u int32, stream uint64, crypto *rand.Rand) *rand.Rand {
	if seed != nil {
		return UserRNG(*seed, g.Label(u), stream)
	}
	if crypto == nil {
		return randx.Crypto()
	}
	return crypto
}
