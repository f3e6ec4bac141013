package serve

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/dplp/dplp/ledger"
)

// cacheStore keeps the reads of the hot paths (token hashes, the latest
// list of (user, model, k), the budgets of list responses and of the
// pre-check) in memory, written through: it keeps them exact for changes
// made through this process. PutToken caches the new hash once the store
// has it, RevokeToken drops the user's cached hash at once; every charge
// through ChargeBatch records the new latest lists and adds each fresh
// charge to its user's cached budget, as the store added it (a budget read that overlapped a charge of that user
// is not cached; a refused or failed charge drops the user's budget, which
// is then read again). The store stays the truth: entries are only copies
// of what it returned or committed, and enforcement never reads the
// cache: the cap is checked by the store inside the charging transaction.
//
// Changes made by another process sharing the store are seen within ttl
// for token hashes, and within budgetTTLFactor (latestTTLFactor) times ttl
// for budgets (latest lists). What that staleness can do (other processes
// only): a token revoked elsewhere keeps working here for up to ttl; a
// sticky GET can re-serve the list released before a fresh one made
// elsewhere (it was released to that user too, so re-serving it is still
// free post-processing); the spent and remaining figures of a list
// response can lag charges made elsewhere, and the pre-check can let a
// request through that the store then refuses (a cached spend is never
// above the store's: spending only grows, so it never refuses wrongly).
// GET .../budget reads the store directly.
//
// Latest lists are cached per provenance (ledger.Provenance is part of the
// key), exactly as the store keeps them: a lookup for one provenance is
// never answered with a release of the other. Latest and LatestBatch
// return lists without their influence sets (list responses never show
// them), and read the misses that way (ledger.LatestLists).
//
// It decorates two parts of the store: ledger.BudgetStore (Latest,
// LatestBatch, Charge, ChargeBatch, and Budget through cachedBudget only)
// and ledger.TokenStore. It embeds the whole ledger.Store because it is the
// server's store: the uncached calls (Budget, Users, Exposure, the
// ledger.MarkStore part, SchemaVersion, Close) pass through, and the
// handlers reach the store beneath it (the timed store) through Store.
type cacheStore struct {
	ledger.Store
	ttl time.Duration
	max int

	mu     sync.RWMutex
	tokGen uint64 // bumped by PutToken and RevokeToken
	spGen  uint64 // bumped by every ChargeBatch
	// spFloor is spGen when the budget map was last cleared (markers
	// included): reads begun before it are not cached.
	spFloor uint64
	tokens  *tokenLRU
	latest  map[latestKey]cached[ledger.Release]
	spend   map[string]spendEntry
}

type cached[T any] struct {
	v   T
	exp time.Time
}

// spendEntry is a user's cached budget: valid until exp, or a marker
// (valid false) that a charge of the user returned at spGen gen, so that
// a read begun before it is not cached.
type spendEntry struct {
	v     ledger.Spend
	exp   time.Time
	gen   uint64
	valid bool
}

type latestKey struct {
	user, model string
	k           int
	prov        ledger.Provenance
}

// newCacheStore caches s's reads: token hashes for ttl, in at most
// tokenBytes bytes; latest lists and budgets for 30 ttl (latestTTLFactor,
// budgetTTLFactor), at most maxEntries of each. ttl <= 0: nothing is
// cached (every read goes to the store).
func newCacheStore(s ledger.Store, ttl time.Duration, maxEntries int, tokenBytes int64) *cacheStore {
	return &cacheStore{Store: s, ttl: ttl, max: maxEntries, tokens: newTokenLRU(tokenBytes),
		latest: map[latestKey]cached[ledger.Release]{}, spend: map[string]spendEntry{}}
}

// latestTTLFactor: latest lists are kept 30 times longer than token
// hashes (30 s by default). A stale latest list is one the user received
// earlier, so re-serving it is still free post-processing; only which of
// the user's lists a sticky GET shows can lag behind other processes.
const latestTTLFactor = 30

// budgetTTLFactor: budgets are kept as long as latest lists. Within this
// process they are exact (written through); only charges made by other
// processes can be missing, which makes a cached spend lower than the
// store's, never higher: the figures of a list response lag, and the
// pre-check may let through a request the store then refuses.
const budgetTTLFactor = latestTTLFactor

// putLatest caches r as the latest list of key (caller holds mu). The
// influencers are dropped: list responses never show them.
func (c *cacheStore) putLatest(key latestKey, r ledger.Release) {
	r.Influencers, r.InflDict, r.InflIdx, r.InflBlocks, r.InflExcl = nil, nil, nil, nil, nil
	if len(c.latest) >= c.max {
		clear(c.latest)
	}
	c.latest[key] = cached[ledger.Release]{r, time.Now().Add(latestTTLFactor * c.ttl)}
}

func get[K comparable, T any](c *cacheStore, m map[K]cached[T], k K) (T, bool) {
	c.mu.RLock()
	e, ok := m[k]
	c.mu.RUnlock()
	if !ok || time.Now().After(e.exp) {
		var zero T
		return zero, false
	}
	return e.v, true
}

// TokenHash is the store's TokenHash through the cache. Callers look up
// nodes of the served graph only (userOf): a negative entry ("no token")
// is cached too, so the entries are bounded by the nodes, and their bytes
// by the cache's budget.
func (c *cacheStore) TokenHash(ctx context.Context, user string) ([]byte, bool, error) {
	c.mu.Lock()
	h, ok := c.tokens.get(user, time.Now())
	c.mu.Unlock()
	if ok {
		return h, h != nil, nil
	}
	c.mu.RLock()
	gen := c.tokGen
	c.mu.RUnlock()
	h, found, err := c.Store.TokenHash(ctx, user)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	switch {
	case gen != c.tokGen:
		// A token changed meanwhile: this read may predate it.
	case c.ttl <= 0:
	case found:
		c.tokens.put(user, h, time.Now().Add(c.ttl))
	default:
		c.tokens.put(user, nil, time.Now().Add(c.ttl)) // negative entry: no token
	}
	c.mu.Unlock()
	return h, found, nil
}

// forgetToken drops user's cached hash and invalidates lookups in flight.
func (c *cacheStore) forgetToken(user string) {
	c.mu.Lock()
	c.tokGen++
	c.tokens.remove(user)
	c.mu.Unlock()
}

// PutToken writes the new hash through: once the store has it, this
// process authenticates with it (and no longer with the old one) without
// reading the store. No lookup started before it can cache the old hash
// afterwards. On error the user's entry is dropped (the store's state is
// unknown).
func (c *cacheStore) PutToken(ctx context.Context, user string, hash []byte) error {
	c.forgetToken(user)
	err := c.Store.PutToken(ctx, user, hash)
	c.mu.Lock()
	c.tokGen++
	c.tokens.remove(user)
	if err == nil && c.ttl > 0 {
		c.tokens.put(user, slices.Clone(hash), time.Now().Add(c.ttl))
	}
	c.mu.Unlock()
	return err
}

// RevokeToken takes effect in this process before it returns: no lookup
// started before it can cache the old hash afterwards.
func (c *cacheStore) RevokeToken(ctx context.Context, user string) error {
	c.forgetToken(user)
	err := c.Store.RevokeToken(ctx, user)
	c.forgetToken(user)
	return err
}

// Latest is LatestBatch for one user (not-found is not cached: the first
// list is on its way).
func (c *cacheStore) Latest(ctx context.Context, user, model string, k int, prov ledger.Provenance) (ledger.Release, bool, error) {
	got, err := c.LatestBatch(ctx, []string{user}, model, k, prov)
	if err != nil {
		return ledger.Release{}, false, err
	}
	r, found := got[user]
	return r, found, nil
}

// LatestBatch is Latest for many users: cached lists are served from
// memory and only the misses go to the store in one batch (the release
// path's sticky lookups all come this way).
func (c *cacheStore) LatestBatch(ctx context.Context, users []string, model string, k int, prov ledger.Provenance) (map[string]ledger.Release, error) {
	out := make(map[string]ledger.Release, len(users))
	var miss []string
	for _, u := range users {
		if r, ok := get(c, c.latest, latestKey{u, model, k, prov}); ok {
			out[u] = r
		} else {
			miss = append(miss, u)
		}
	}
	if len(miss) == 0 {
		return out, nil
	}
	got, err := ledger.LatestLists(ctx, c.Store, miss, model, k, prov)
	if err != nil {
		return nil, err
	}
	for u, r := range got {
		if r.Provenance() != prov { // the store's contract rules it out
			return nil, fmt.Errorf("serve: the store returned %s release %d of %q for a %s lookup", r.Provenance(), r.ID, u, prov)
		}
	}
	c.mu.Lock()
	for u, r := range got {
		key := latestKey{u, model, k, prov}
		if cur, ok := c.latest[key]; !ok || cur.v.ID < r.ID {
			c.putLatest(key, r)
		}
		out[u] = r
	}
	c.mu.Unlock()
	return out, nil
}

// cachedBudget is Budget through the cache (list responses and the
// pre-check only; enforcement is the store's).
func (c *cacheStore) cachedBudget(ctx context.Context, user string) (ledger.Spend, error) {
	c.mu.RLock()
	e, ok := c.spend[user]
	gen := c.spGen
	c.mu.RUnlock()
	if ok && e.valid && time.Now().Before(e.exp) {
		return e.v, nil
	}
	sp, err := c.Store.Budget(ctx, user)
	if err != nil {
		return sp, err
	}
	c.mu.Lock()
	if cur, ok := c.spend[user]; gen >= c.spFloor && (!ok || cur.gen <= gen) { // no charge of user returned since the read began
		c.putSpend(user, spendEntry{v: sp, exp: time.Now().Add(budgetTTLFactor * c.ttl), gen: gen, valid: c.ttl > 0})
	}
	c.mu.Unlock()
	return sp, nil
}

// putSpend stores e as user's budget entry (caller holds mu), dropping
// every entry when the map is full.
func (c *cacheStore) putSpend(user string, e spendEntry) {
	if _, ok := c.spend[user]; !ok && len(c.spend) >= c.max {
		clear(c.spend)
		c.spFloor = c.spGen
	}
	c.spend[user] = e
}

func (c *cacheStore) Charge(ctx context.Context, r ledger.Release, cp ledger.Cap) (ledger.Release, bool, error) {
	res, err := c.ChargeBatch(ctx, []ledger.Release{r}, cp)
	if err != nil {
		return ledger.Release{}, false, err
	}
	return res[0].Release, res[0].Fresh, res[0].Err
}

func (c *cacheStore) ChargeBatch(ctx context.Context, rs []ledger.Release, cp ledger.Cap) ([]ledger.ChargeResult, error) {
	res, err := c.Store.ChargeBatch(ctx, rs, cp)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spGen++
	// stale marks user's budget as unknown: reads begun before now are
	// not cached.
	stale := func(user string) { c.putSpend(user, spendEntry{gen: c.spGen}) }
	if err != nil {
		// The outcome may be unknown: forget what these users' reads said.
		for _, r := range rs {
			stale(r.User)
		}
		return res, err
	}
	now := time.Now()
	for i, x := range res {
		if x.Err != nil {
			// Refused: the store's totals are not what the cache thought
			// (another process charged, or the pre-check was passed on a
			// lower figure). Read them again.
			stale(rs[i].User)
			continue
		}
		if x.Release.ID == 0 {
			continue
		}
		if e, ok := c.spend[x.Release.User]; ok && x.Fresh && e.valid && now.Before(e.exp) {
			// The store added this release to the totals it read: do the
			// same here, in the same order (charges through this process
			// are serialised by the store), instead of reading them again.
			e.v.Spent += x.Release.Cost
			e.v.Rho += x.Release.Rho
			if math.IsInf(x.Release.PartyCost, 1) {
				e.v.PartyUnbounded++
			} else {
				e.v.PartySpent += x.Release.PartyCost
			}
			e.v.Releases++
			if x.Release.Seeded {
				e.v.Seeded++
			}
			e.gen = c.spGen
			c.spend[x.Release.User] = e
		} else if x.Fresh {
			stale(x.Release.User)
		}
		key := latestKey{x.Release.User, x.Release.Model, x.Release.K, x.Release.Provenance()}
		if cur, ok := c.latest[key]; !ok || cur.v.ID < x.Release.ID {
			c.putLatest(key, x.Release)
		}
	}
	return res, nil
}

// tokenLRU holds token hashes (nil: the user has no token) by user, least
// recently used first out, within a byte budget; entries expire.
type tokenLRU struct {
	maxBytes, bytes int64
	ll              *list.List // front: most recently used
	m               map[string]*list.Element
}

type tokenEntry struct {
	user string
	hash []byte
	exp  time.Time
}

// tokenEntryOverhead approximates an entry's memory beyond its user and
// hash bytes (map slot, list element, headers).
const tokenEntryOverhead = 160

func newTokenLRU(maxBytes int64) *tokenLRU {
	return &tokenLRU{maxBytes: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

func entryBytes(user string, hash []byte) int64 {
	return int64(len(user)+len(hash)) + tokenEntryOverhead
}

func (l *tokenLRU) get(user string, now time.Time) ([]byte, bool) {
	e, ok := l.m[user]
	if !ok {
		return nil, false
	}
	te := e.Value.(*tokenEntry)
	if now.After(te.exp) {
		l.removeElem(e)
		return nil, false
	}
	l.ll.MoveToFront(e)
	return te.hash, true
}

func (l *tokenLRU) put(user string, hash []byte, exp time.Time) {
	l.remove(user)
	n := entryBytes(user, hash)
	if n > l.maxBytes {
		return
	}
	for l.bytes+n > l.maxBytes {
		l.removeElem(l.ll.Back())
	}
	l.m[user] = l.ll.PushFront(&tokenEntry{user: user, hash: hash, exp: exp})
	l.bytes += n
}

func (l *tokenLRU) remove(user string) {
	if e, ok := l.m[user]; ok {
		l.removeElem(e)
	}
}

func (l *tokenLRU) removeElem(e *list.Element) {
	te := l.ll.Remove(e).(*tokenEntry)
	delete(l.m, te.user)
	l.bytes -= entryBytes(te.user, te.hash)
}

// len is the number of entries (tests).
func (l *tokenLRU) len() int { return len(l.m) }
