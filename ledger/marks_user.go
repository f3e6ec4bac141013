package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// UserMarker is implemented by stores that read one user's marks with one
// indexed lookup (the marks table's primary key), instead of decoding every
// user's marks as Marks does. The stores Open and OpenWith return implement
// it; use UserMarks to fall back to Marks for other stores.
type UserMarker interface {
	// UserMarks returns user's own protected labels (sorted, deduplicated;
	// nil when the user has none).
	UserMarks(ctx context.Context, user string) ([]string, error)
}

// UserMarks returns user's own protected labels from s: through
// UserMarker when s implements it, else by filtering Marks.
func UserMarks(ctx context.Context, s Store, user string) ([]string, error) {
	if um, ok := s.(UserMarker); ok {
		return um.UserMarks(ctx, user)
	}
	all, err := s.Marks(ctx)
	if err != nil {
		return nil, err
	}
	return all[user], nil
}

// UserMarks reads user's marks by the marks table's primary key.
func (s *sqlStore) UserMarks(ctx context.Context, user string) ([]string, error) {
	var labels string
	found := false
	err := s.b.read(ctx, func(q querier) error {
		err := q.queryRow(ctx, "SELECT labels FROM marks WHERE user_id = ?", user).Scan(&labels)
		if errors.Is(err, errNoRows) {
			found = false
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return nil, err
	}
	var l []string
	if err := json.Unmarshal([]byte(labels), &l); err != nil {
		return nil, fmt.Errorf("ledger: stored marks of %q: %w", user, err)
	}
	return l, nil
}
