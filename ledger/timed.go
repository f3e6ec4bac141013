package ledger

import (
	"context"
	"time"
)

// Timed returns a Store that reports the duration of every call to s
// (Exposure and Close excepted) to the observer observe(op) returns for
// the call's operation, resolved once per operation when Timed is called.
// Operations: charge (Charge and ChargeBatch), latest (Latest and
// LatestBatch and LatestLists), budget, users, token_hash, put_token, revoke_token,
// set_marks, marks (Marks and UserMarks), schema_version. The result also
// implements UserMarker (UserMarks on s, timed as marks). Timing is all it
// adds: every call's results are s's.
func Timed(s Store, observe func(op string) func(time.Duration)) Store {
	return &timedStore{Store: s,
		charge: observe("charge"), latest: observe("latest"), budget: observe("budget"), users: observe("users"),
		token: observe("token_hash"), putToken: observe("put_token"), revoke: observe("revoke_token"),
		setMarks: observe("set_marks"), marks: observe("marks"), schema: observe("schema_version")}
}

// Untimed returns the store a Timed store wraps (s itself otherwise).
func Untimed(s Store) Store {
	if t, ok := s.(*timedStore); ok {
		return t.Store
	}
	return s
}

type timedStore struct {
	Store
	charge, latest, budget, users, token, putToken, revoke, setMarks, marks, schema func(time.Duration)
}

func since(o func(time.Duration), t time.Time) { o(time.Since(t)) }

// BudgetStore.

func (s *timedStore) Charge(ctx context.Context, r Release, c Cap) (Release, bool, error) {
	defer since(s.charge, time.Now())
	return s.Store.Charge(ctx, r, c)
}

func (s *timedStore) ChargeBatch(ctx context.Context, rs []Release, c Cap) ([]ChargeResult, error) {
	defer since(s.charge, time.Now())
	return s.Store.ChargeBatch(ctx, rs, c)
}

func (s *timedStore) Latest(ctx context.Context, user, model string, k int, prov Provenance) (Release, bool, error) {
	defer since(s.latest, time.Now())
	return s.Store.Latest(ctx, user, model, k, prov)
}

func (s *timedStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	defer since(s.latest, time.Now())
	return s.Store.LatestBatch(ctx, users, model, k, prov)
}

// LatestLists is timed as latest (ListLookup).
func (s *timedStore) LatestLists(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	defer since(s.latest, time.Now())
	return LatestLists(ctx, s.Store, users, model, k, prov)
}

func (s *timedStore) Budget(ctx context.Context, user string) (Spend, error) {
	defer since(s.budget, time.Now())
	return s.Store.Budget(ctx, user)
}

func (s *timedStore) Users(ctx context.Context) ([]Spend, error) {
	defer since(s.users, time.Now())
	return s.Store.Users(ctx)
}

// TokenStore.

func (s *timedStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	defer since(s.token, time.Now())
	return s.Store.TokenHash(ctx, user)
}

func (s *timedStore) PutToken(ctx context.Context, user string, hash []byte) error {
	defer since(s.putToken, time.Now())
	return s.Store.PutToken(ctx, user, hash)
}

func (s *timedStore) RevokeToken(ctx context.Context, user string) error {
	defer since(s.revoke, time.Now())
	return s.Store.RevokeToken(ctx, user)
}

// MarkStore (and UserMarker).

func (s *timedStore) SetMarks(ctx context.Context, user string, marks []string) error {
	defer since(s.setMarks, time.Now())
	return s.Store.SetMarks(ctx, user, marks)
}

func (s *timedStore) Marks(ctx context.Context) (map[string][]string, error) {
	defer since(s.marks, time.Now())
	return s.Store.Marks(ctx)
}

// UserMarks reads one user's marks (UserMarks: one indexed lookup on the
// stores dplp opens).
func (s *timedStore) UserMarks(ctx context.Context, user string) ([]string, error) {
	defer since(s.marks, time.Now())
	return UserMarks(ctx, s.Store, user)
}

// Store itself.

func (s *timedStore) SchemaVersion(ctx context.Context) (int, error) {
	defer since(s.schema, time.Now())
	return s.Store.SchemaVersion(ctx)
}
