package ledger

// MarkStore (and UserMarker): users' own protected labels.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

func (s *sqlStore) SetMarks(ctx context.Context, user string, marks []string) error {
	if err := checkText("user", user, false); err != nil {
		return err
	}
	set := map[string]bool{}
	for i, m := range marks {
		if err := checkText(fmt.Sprintf("mark %d of %q", i, user), m, true); err != nil {
			return err
		}
		set[m] = true
	}
	list := make([]string, 0, len(set))
	for m := range set {
		list = append(list, m)
	}
	sort.Strings(list)
	b, _ := json.Marshal(list)
	return s.b.write(ctx, func(q querier) error {
		if len(list) == 0 {
			return q.exec(ctx, "DELETE FROM marks WHERE user_id = ?", user)
		}
		return q.exec(ctx, `INSERT INTO marks (user_id, labels) VALUES (?, ?)
			ON CONFLICT (user_id) DO UPDATE SET labels = excluded.labels`, user, string(b))
	})
}

func (s *sqlStore) Marks(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := s.b.read(ctx, func(q querier) error {
		clear(out)
		rs, err := q.query(ctx, "SELECT user_id, labels FROM marks")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var u, labels string
			if err := rs.Scan(&u, &labels); err != nil {
				return err
			}
			var l []string
			if err := json.Unmarshal([]byte(labels), &l); err != nil {
				return fmt.Errorf("ledger: stored marks of %q: %w", u, err)
			}
			out[u] = l
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

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
func UserMarks(ctx context.Context, s MarkStore, user string) ([]string, error) {
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
