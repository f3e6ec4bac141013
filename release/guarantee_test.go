package release_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dplp/dplp/release"
)

// TestGuaranteeCache: the cached guarantees are the computed ones, for
// every picks count (below, at and past the table's growth points and its
// largest size), both provenances, asked from many goroutines in scattered
// order; a huge picks count does not grow the table past its bound.
func TestGuaranteeCache(t *testing.T) {
	g, p, m := fixture(t)
	for _, exact := range []bool{false, true} {
		opts := []release.Option{release.WithSeed(1)}
		if exact {
			opts = append(opts, release.WithSampler(release.SamplerExact))
		}
		rec, err := release.New(m, g, p, opts...)
		if err != nil {
			t.Fatal(err)
		}
		picks := []int{300, 0, 1, 63, 64, 65, 127, 128, 129, 30, 5, 1000, 2, 4095, 4096, 5000, 2047, 1 << 20}
		var wg sync.WaitGroup
		errs := make(chan string, 4*len(picks))
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range picks {
					n := picks[(i+w)%len(picks)]
					for _, seeded := range []bool{false, true} {
						c, f := release.GuaranteesForTest(rec, n, seeded)
						if c != f {
							errs <- fmt.Sprintf("picks %d seeded %v: cached %+v, computed %+v", n, seeded, c, f)
						}
						if c.Picks != n {
							errs <- "wrong picks"
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for d := range errs {
			t.Errorf("exact=%v: %s", exact, d)
		}
		if n := release.GuaranteeTableLenForTest(rec); n < 2048 || n > 4096 {
			t.Errorf("exact=%v: the table holds %d counts after asking up to %d (want 2048..4096)", exact, n, 1<<20)
		}
	}
}
