package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"
)

// oldFile is the JSON ledger written by package account (version 1).
type oldFile struct {
	Version  *int                `json:"version"`
	Spent    map[string]*float64 `json:"spent"`
	Releases []*oldRelease       `json:"releases"`
}

type oldRelease struct {
	User  *string   `json:"user"`
	Key   string    `json:"key"`
	EpsP  float64   `json:"eps_p"`
	K     int       `json:"k"`
	Cost  *float64  `json:"cost"`
	List  []string  `json:"list"`
	Time  time.Time `json:"time"`
	Reads int       `json:"reads"`
}

// AdjustmentModel prefixes the Model of the entry ImportJSON records when a
// user's releases in the old file sum to less than the file's spending figure
// (the old ledger replaced a release it charged again, keeping only the
// newest list, but kept the spending).
const AdjustmentModel = "import-adjustment: spending of replaced releases in "

// importTolerance is the relative floating-point slack between a user's
// releases and the file's spending figure (the old ledger summed in another
// order).
const importTolerance = 1e-9

// parseOld validates an old ledger file and returns the releases to charge,
// in file order per user, with an adjustment entry per user where needed,
// and each user's spending figure.
func parseOld(path string, data []byte) ([]Release, map[string]float64, error) {
	var f oldFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, nil, fmt.Errorf("%s: not a dplp JSON ledger: %w", path, err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("%s: not a dplp JSON ledger: data after the JSON object", path)
	}
	if f.Version == nil {
		return nil, nil, fmt.Errorf("%s: not a dplp JSON ledger: no \"version\"", path)
	}
	if *f.Version != 1 {
		return nil, nil, fmt.Errorf("%s: JSON ledger version %d, ImportJSON reads version 1", path, *f.Version)
	}
	sum := sha256.Sum256(data)
	tag := hex.EncodeToString(sum[:8])
	spent := map[string]float64{}
	for u, s := range f.Spent {
		if s == nil || !finiteNonNeg(*s) {
			v := "null"
			if s != nil {
				v = fmt.Sprint(*s)
			}
			return nil, nil, fmt.Errorf("%s: spent[%q] = %s: want a finite number >= 0", path, u, v)
		}
		if err := checkText("user", u, false); err != nil {
			return nil, nil, fmt.Errorf("%s: spent[%q]: %w", path, u, err)
		}
		spent[u] = *s
	}
	now := time.Now().UTC()
	var out []Release
	sums := map[string]float64{}
	for i, r := range f.Releases {
		where := fmt.Sprintf("%s: releases[%d]", path, i)
		if r == nil {
			return nil, nil, fmt.Errorf("%s: null entry (want an object with user, key, eps_p, k, cost, list)", where)
		}
		if r.User == nil {
			return nil, nil, fmt.Errorf("%s: no \"user\"", where)
		}
		if r.Cost == nil {
			return nil, nil, fmt.Errorf("%s (user %q): no \"cost\"", where, *r.User)
		}
		rel := Release{
			User: *r.User, Model: r.Key, K: r.K, EpsP: r.EpsP, List: r.List, Cost: *r.Cost,
			Rho:         *r.Cost * *r.Cost / 2, // an eps-DP release is eps^2/2-zCDP
			Time:        r.Time,
			IdemKey:     fmt.Sprintf("import:%s:%d", tag, i),
			Influencers: []string{"*"}, // unknown: assume every party
		}
		norm, err := normalize(rel, now) // a missing time becomes the import time
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		if math.IsInf(norm.Rho, 1) {
			return nil, nil, fmt.Errorf("%s (user %q): cost %v too large", where, *r.User, *r.Cost)
		}
		if _, ok := spent[norm.User]; !ok {
			return nil, nil, fmt.Errorf("%s: user %q has releases but no \"spent\" figure", where, norm.User)
		}
		sums[norm.User] += norm.Cost
		out = append(out, norm)
	}
	users := make([]string, 0, len(spent))
	for u := range spent {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		s, r := spent[u], sums[u]
		slack := importTolerance * math.Max(1, s)
		switch {
		case r > s+slack:
			return nil, nil, fmt.Errorf("%s: user %q: releases cost %v in total, more than the spent figure %v (file inconsistent)", path, u, r, s)
		case r < s-slack:
			adj, err := normalize(Release{
				User: u, Model: AdjustmentModel + path, K: 1, EpsP: s - r, Cost: s - r, Rho: (s - r) * (s - r) / 2,
				List: []string{}, IdemKey: fmt.Sprintf("import:%s:adjust", tag), Time: now,
				Influencers: []string{"*"},
			}, now)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: user %q: adjustment of %v: %w", path, u, s-r, err)
			}
			if math.IsInf(adj.Rho, 1) {
				return nil, nil, fmt.Errorf("%s: user %q: spent %v too large", path, u, s)
			}
			out = append(out, adj)
		}
	}
	return out, spent, nil
}

// ImportJSON charges the releases of an old account JSON ledger (format
// version 1: {"version":1,"spent":{user:eps},"releases":[{user, key, eps_p,
// k, cost, list, time, reads}]}) to s, in one transaction, without caps (the
// releases already happened). Every user's imported spending equals the
// file's "spent" figure (up to rounding): when the file's releases sum to
// less, an adjustment entry (Model AdjustmentModel+path, empty list) makes up
// the difference. Imported releases are charged rho = cost^2/2 (an eps-DP
// release is eps^2/2-zCDP) and have Influencers ["*"], since the old ledger
// did not record who could influence them.
//
// Idempotency keys derived from the file's content make a second import of
// the same file a no-op: imported counts only the entries newly recorded.
// An invalid file is an error naming the file and the entry; nothing is
// recorded then.
func ImportJSON(ctx context.Context, s BudgetStore, path string) (imported int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("ledger: import: %w", err)
	}
	rs, _, err := parseOld(path, data)
	if err != nil {
		return 0, fmt.Errorf("ledger: import: %w", err)
	}
	if len(rs) == 0 {
		return 0, nil
	}
	res, err := s.ChargeBatch(ctx, rs, Unlimited)
	if err != nil {
		return 0, fmt.Errorf("ledger: import %s: %w", path, err)
	}
	for i, r := range res {
		if r.Err != nil {
			return imported, fmt.Errorf("ledger: import %s: entry %d (user %q): %w", path, i, rs[i].User, r.Err)
		}
		if r.Fresh {
			imported++
		}
	}
	return imported, nil
}
