// Package account keeps the privacy budget ledger (privacy-model §6): every
// released top-K list for a query node u costs K x eps_p under basic
// composition; serving an already released list again is post-processing and
// costs nothing. A Ledger can be saved to and loaded from a JSON file so that
// spending accumulates across runs.
package account

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Release is one released list.
type Release struct {
	User  string    `json:"user"`
	Key   string    `json:"key"` // what was released: model checksum or mechanism description
	Eps   float64   `json:"eps_p"`
	K     int       `json:"k"`
	Cost  float64   `json:"cost"` // K * eps_p
	List  []string  `json:"list"`
	Time  time.Time `json:"time"`
	Reads int       `json:"reads"` // times served again at no cost
}

// Ledger records spending per user. Safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	releases map[string]*Release // by user + "\x00" + key
	spent    map[string]float64
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{releases: make(map[string]*Release), spent: make(map[string]float64)}
}

func id(user, key string) string { return user + "\x00" + key }

// Lookup returns the list already released to user under key, if any, and
// counts the re-read (free).
func (l *Ledger) Lookup(user, key string) ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.releases[id(user, key)]
	if !ok {
		return nil, false
	}
	r.Reads++
	return r.List, true
}

// Record charges a fresh release of list (length <= k) to user and returns
// its cost k * eps. A release under a key that already has one is a fresh
// sample and is charged again (the stored list is replaced).
func (l *Ledger) Record(user, key string, eps float64, k int, list []string) (float64, error) {
	if !(eps >= 0) || k < 1 {
		return 0, fmt.Errorf("account: invalid release eps=%v k=%d", eps, k)
	}
	cost := float64(k) * eps
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releases[id(user, key)] = &Release{User: user, Key: key, Eps: eps, K: k, Cost: cost, List: append([]string(nil), list...), Time: time.Now().UTC()}
	l.spent[user] += cost
	return cost, nil
}

// Spent is the total eps charged to user.
func (l *Ledger) Spent(user string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent[user]
}

// Total is the sum over users of their spending and the number of users.
func (l *Ledger) Total() (eps float64, users int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.spent {
		eps += s
	}
	return eps, len(l.spent)
}

// MaxSpent is the largest per-user spending (the guarantee any one user's
// protected pairs get from all releases so far, by basic composition).
func (l *Ledger) MaxSpent() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := 0.0
	for _, s := range l.spent {
		m = max(m, s)
	}
	return m
}

type fileFormat struct {
	Version  int                `json:"version"`
	Spent    map[string]float64 `json:"spent"`
	Releases []*Release         `json:"releases"`
}

const fileVersion = 1

// Load reads a ledger file; a missing file gives an empty ledger.
func Load(path string) (*Ledger, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, err
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: not a dplp ledger: %w", path, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("%s: ledger version %d, this dplp reads version %d", path, f.Version, fileVersion)
	}
	l := New()
	for u, s := range f.Spent {
		if !(s >= 0) {
			return nil, fmt.Errorf("%s: negative or invalid spending %v for %q", path, s, u)
		}
		l.spent[u] = s
	}
	for _, r := range f.Releases {
		l.releases[id(r.User, r.Key)] = r
	}
	return l, nil
}

// Save writes the ledger atomically (temporary file, then rename).
func (l *Ledger) Save(path string) error {
	l.mu.Lock()
	f := fileFormat{Version: fileVersion, Spent: l.spent}
	for _, r := range l.releases {
		f.Releases = append(f.Releases, r)
	}
	sort.Slice(f.Releases, func(i, j int) bool {
		a, b := f.Releases[i], f.Releases[j]
		if a.User != b.User {
			return a.User < b.User
		}
		return a.Key < b.Key
	})
	b, err := json.MarshalIndent(f, "", " ")
	l.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
