package ledger

// TokenStore: hashes of the service's bearer tokens.

import (
	"context"
	"errors"
)

func (s *sqlStore) PutToken(ctx context.Context, user string, hash []byte) error {
	if err := checkText("user", user, false); err != nil {
		return err
	}
	if len(hash) == 0 {
		return invalid("empty token hash for %q", user)
	}
	return s.b.write(ctx, func(q querier) error {
		return q.exec(ctx, `INSERT INTO tokens (user_id, hash, created) VALUES (?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, created = excluded.created`,
			user, append([]byte{}, hash...), fmtTime(s.now()))
	})
}

func (s *sqlStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	var h []byte
	found := false
	err := s.b.read(ctx, func(q querier) error {
		err := q.queryRow(ctx, "SELECT hash FROM tokens WHERE user_id = ?", user).Scan(&h)
		if errors.Is(err, errNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return nil, false, err
	}
	return h, true, nil
}

func (s *sqlStore) RevokeToken(ctx context.Context, user string) error {
	return s.b.write(ctx, func(q querier) error {
		return q.exec(ctx, "DELETE FROM tokens WHERE user_id = ?", user)
	})
}
