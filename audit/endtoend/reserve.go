package endtoend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
)

// recFactory builds a Recommender for one instance with extra options.
type recFactory func(opts ...release.Option) (*release.Recommender, error)

// reserveKey is the idempotency key both provenances use in the re-serve
// check (a key shared across provenances must not cross them).
const reserveKey = "endtoend-audit"

// checkReserve runs the re-serve check on one instance with a fresh SQLite
// ledger in a temporary directory (ledger.Open), removed afterwards.
func (a *auditor) checkReserve(ctx context.Context, name string, mk recFactory, users []string) error {
	dir, err := os.MkdirTemp("", "dplp-endtoend-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := ledger.Open(ctx, "sqlite:"+filepath.Join(dir, "ledger.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	seed := a.cfg.Seed
	seeded := func(opts ...release.Option) (*release.Recommender, error) {
		return mk(append(opts, release.WithSeed(seed))...)
	}
	checks, viol, first, err := reserveCheck(ctx, st, seeded, mk, users, a.cfg.MaxK)
	if err != nil {
		return err
	}
	a.rep.ReserveChecks += checks
	a.rep.ReserveViolations += viol
	if first != "" {
		a.note(fmt.Sprintf("%s: %s", name, first))
	}
	return nil
}

// reserveCheck is the re-serve check: with store st shared by both,
// seeded releases lists to users at K = k (through the automatic sticky
// idempotency key) and, for users[0], once more under reserveKey; then
// private (which must be crypto-seeded) is asked for the same users, at the
// same K and under the same key. Each private result is a violation when it
// is marked seeded or is one of the seeded releases (same release id), and
// so is a failed private request
// (the deployment contract: a crypto-seeded Recommender samples and charges
// a private list when the store only holds seeded ones). It returns the
// private results compared, the violations and the first one described.
func reserveCheck(ctx context.Context, st ledger.Store, seeded, private recFactory, users []string, k int) (checks, viol int64, first string, err error) {
	if len(users) == 0 {
		return 0, 0, "", nil
	}
	seededIDs := map[string][]int64{}
	release1 := func(r *release.Recommender, us []string) error {
		res, err := r.Recommend(ctx, us, k)
		if err != nil {
			return fmt.Errorf("endtoend: seeded release for the re-serve check: %w", err)
		}
		for _, x := range res {
			seededIDs[x.User] = append(seededIDs[x.User], x.ReleaseID)
		}
		return nil
	}
	s1, err := seeded(release.WithStore(st))
	if err != nil {
		return 0, 0, "", err
	}
	if err := release1(s1, users); err != nil {
		return 0, 0, "", err
	}
	s2, err := seeded(release.WithStore(st), release.WithIdempotencyKey(reserveKey), release.WithFresh(true))
	if err != nil {
		return 0, 0, "", err
	}
	if err := release1(s2, users[:1]); err != nil {
		return 0, 0, "", err
	}
	fail := func(s string) {
		viol++
		if first == "" {
			first = s
		}
	}
	ask := func(what string, us []string, opts ...release.Option) error {
		p, err := private(append([]release.Option{release.WithStore(st)}, opts...)...)
		if err != nil {
			return err
		}
		if p.Seeded() {
			fail(fmt.Sprintf("re-serve check: the %s request is seeded, not private", what))
		}
		res, err := p.Recommend(ctx, us, k)
		if err != nil {
			checks += int64(len(us))
			fail(fmt.Sprintf("re-serve check: a %s request failed on a store holding seeded releases: %v", what, err))
			return nil
		}
		for _, x := range res {
			checks++
			switch {
			case x.Seeded:
				fail(fmt.Sprintf("re-serve check: user %s's %s request got a seeded list (release %d)", x.User, what, x.ReleaseID))
			case slices.Contains(seededIDs[x.User], x.ReleaseID):
				fail(fmt.Sprintf("re-serve check: user %s's %s request got seeded release %d", x.User, what, x.ReleaseID))
			}
		}
		return nil
	}
	if err := ask("private", users); err != nil {
		return checks, viol, first, err
	}
	if err := ask("private (same idempotency key)", users[:1], release.WithIdempotencyKey(reserveKey), release.WithFresh(true)); err != nil {
		return checks, viol, first, err
	}
	return checks, viol, first, nil
}
