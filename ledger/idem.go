package ledger

import (
	"context"
	"errors"
	"strings"
)

// IdemFinder is implemented by stores that can look a release up by its
// idempotency key. The service uses it to refuse an exhausted user's keyed
// request before sampling, while a retry of a request already charged
// still gets its list.
type IdemFinder interface {
	// FindIdem returns the release of user recorded under key with
	// provenance prov (one indexed lookup), if there is one.
	FindIdem(ctx context.Context, user, key string, prov Provenance) (Release, bool, error)
}

func (s *sqlStore) FindIdem(ctx context.Context, user, key string, prov Provenance) (Release, bool, error) {
	seeded, err := prov.seededCol()
	if err != nil {
		return Release{}, false, err
	}
	if key == "" {
		return Release{}, false, nil
	}
	if err := s.flushFor(ctx, user); err != nil {
		return Release{}, false, err
	}
	var rel Release
	found := false
	err = s.b.read(ctx, func(q querier) error {
		var err error
		rel, err = scanReleaseFor(q.queryRow(ctx, idemLookupSQL(s.schema), user, key, seeded), s.schema)
		if errors.Is(err, errNoRows) {
			return nil
		}
		if err == nil {
			err = resolveReleases(ctx, q, &s.labels, []*Release{&rel})
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return Release{}, false, err
	}
	return rel, true, nil
}

// idemLookupSQL finds one user's release by key and provenance (arguments:
// user, key, seeded). idemBatchSQL finds the releases of users (arguments:
// key, seeded, then the users) holding one key. Both say idem_key = ?,
// which implies the condition of the partial index releases_idem_key
// (WHERE idem_key IS NOT NULL, schema 11), so both planners use it
// (TestIdemIndexPartial).
func idemLookupSQL(v schemaLevel) string {
	return "SELECT " + releaseColsFor(v) + " FROM releases WHERE user_id = ? AND idem_key = ? AND seeded = ?"
}

func idemBatchSQL(v schemaLevel, users int) string {
	return "SELECT " + releaseColsFor(v) + " FROM releases WHERE idem_key = ? AND seeded = ? AND user_id IN (?" + strings.Repeat(", ?", users-1) + ")"
}
