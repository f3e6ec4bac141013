package ledger

// The reads of the budget part (BudgetStore): the latest releases to
// re-serve and the users' spending totals.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

func (s *sqlStore) Latest(ctx context.Context, user, model string, k int, prov Provenance) (Release, bool, error) {
	seeded, err := prov.seededCol()
	if err != nil {
		return Release{}, false, err
	}
	if err := s.flushFor(ctx, user); err != nil {
		return Release{}, false, err
	}
	var rel Release
	found := false
	err = s.b.read(ctx, func(q querier) error {
		var err error
		rel, err = scanReleaseFor(q.queryRow(ctx, "SELECT "+releaseColsFor(s.schema)+" FROM releases WHERE user_id = ? AND model = ? AND k = ? AND seeded = ? ORDER BY id DESC LIMIT 1", user, model, k, seeded), s.schema)
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
	if rel.Seeded != (prov == Seeded) { // the query filters on it: a broken store
		return Release{}, false, fmt.Errorf("ledger: release %d of %q is %s, asked for %s", rel.ID, user, rel.Provenance(), prov)
	}
	return rel, true, nil
}

func (s *sqlStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	return s.latestBatch(ctx, users, model, k, prov, true)
}

// LatestLists is LatestBatch without the influence sets (ListLookup).
func (s *sqlStore) LatestLists(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	return s.latestBatch(ctx, users, model, k, prov, false)
}

// latestBatch is LatestBatch, with the influence sets read back into
// labels when infl is true and left out otherwise.
func (s *sqlStore) latestBatch(ctx context.Context, users []string, model string, k int, prov Provenance, infl bool) (map[string]Release, error) {
	seeded, err := prov.seededCol()
	if err != nil {
		return nil, err
	}
	if err := s.flushFor(ctx, users...); err != nil {
		return nil, err
	}
	out := make(map[string]Release)
	const chunk = 500
	for lo := 0; lo < len(users); lo += chunk {
		part := users[lo:min(lo+chunk, len(users))]
		args := make([]any, 0, len(part)+3)
		args = append(args, model, k, seeded)
		for _, u := range part {
			args = append(args, u)
		}
		q := "SELECT " + releaseColsFor(s.schema) + " FROM releases WHERE model = ? AND k = ? AND seeded = ? AND user_id IN (?" + strings.Repeat(", ?", len(part)-1) + ") ORDER BY id"
		err := s.b.read(ctx, func(qr querier) error {
			rs, err := qr.query(ctx, q, args...)
			if err != nil {
				return err
			}
			var got []Release
			for rs.Next() {
				rel, err := scanReleaseFor(rs, s.schema)
				if err != nil {
					rs.Close()
					return err
				}
				if rel.Seeded != (prov == Seeded) { // the query filters on it: a broken store
					rs.Close()
					return fmt.Errorf("ledger: release %d of %q is %s, asked for %s", rel.ID, rel.User, rel.Provenance(), prov)
				}
				got = append(got, rel)
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return err
			}
			ptrs := make([]*Release, len(got))
			for i := range got {
				ptrs[i] = &got[i]
			}
			if !infl {
				for _, rel := range ptrs {
					dropInfluence(rel)
				}
			} else if err := resolveReleases(ctx, qr, &s.labels, ptrs); err != nil {
				return err
			}
			for _, rel := range got {
				out[rel.User] = rel // ascending id: the newest wins
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *sqlStore) Budget(ctx context.Context, user string) (Spend, error) {
	if s.j != nil {
		// The journal's totals include its pending charges; a user it
		// does not hold has none, so the table's row is current.
		if sp, ok := s.j.budget(user); ok {
			return sp, nil
		}
	}
	sp := Spend{User: user}
	err := s.b.read(ctx, func(q querier) error {
		var rel, seeded, unb int64
		err := q.queryRow(ctx, "SELECT spent, rho, releases, seeded, "+spendPartyCols(s.schema)+" FROM spend WHERE user_id = ?", user).Scan(&sp.Spent, &sp.Rho, &rel, &seeded, &sp.PartySpent, &unb)
		if errors.Is(err, errNoRows) {
			return nil
		}
		sp.Releases, sp.Seeded, sp.PartyUnbounded = int(rel), int(seeded), int(unb)
		return err
	})
	return sp, err
}

func (s *sqlStore) Users(ctx context.Context) ([]Spend, error) {
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	var out []Spend
	err := s.b.read(ctx, func(q querier) error {
		out = nil
		rs, err := q.query(ctx, "SELECT user_id, spent, rho, releases, seeded, "+spendPartyCols(s.schema)+" FROM spend WHERE releases > 0")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var sp Spend
			var rel, seeded, unb int64
			if err := rs.Scan(&sp.User, &sp.Spent, &sp.Rho, &rel, &seeded, &sp.PartySpent, &unb); err != nil {
				return err
			}
			sp.Releases, sp.Seeded, sp.PartyUnbounded = int(rel), int(seeded), int(unb)
			out = append(out, sp)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// spendPartyCols are the spend columns of the party-unit totals (constants
// for a store at a schema before partySchema: its releases are party-unit,
// tests only).
func spendPartyCols(v schemaLevel) string {
	if !v.hasParty() {
		return "spent, 0"
	}
	return "party_spent, party_unbounded"
}
