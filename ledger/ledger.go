package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dplp/dplp/privunit"
)

// Release is one released top-K list: what was released, to whom, and what
// it cost. A Release is immutable once recorded.
type Release struct {
	// ID is assigned by the store when the release is recorded; it is
	// positive, unique within a store and never reused. Ignored by Charge.
	ID int64
	// User is the observer the list was released to (the query node u).
	// Required: non-empty valid UTF-8 without NUL bytes.
	User string
	// Model identifies what produced the list: a model ID (checksum) or a
	// description of the mechanism and its parameters. Latest looks releases
	// up by (User, Model, K).
	Model string
	// K is the list length asked for (>= 1); EpsP the per-pick epsilon.
	K    int
	EpsP float64
	// List is the released list, best first, len(List) <= K. Labels are
	// arbitrary valid UTF-8 strings (including empty strings and NUL bytes)
	// and are stored exactly.
	List []string
	// Cost is the pure-DP epsilon charged to User: at most K*EpsP, less when
	// some picks are fixed by invariant data alone, 0 allowed; finite, >= 0.
	Cost float64
	// Rho is the zCDP rho charged to User (finite, >= 0).
	Rho float64
	// Seeded reports that the noise came from a seeded generator: such a
	// release has NO privacy guarantee and must not be deployed. Every
	// output derived from it must be able to say so. It is the release's
	// provenance (Provenance): re-serve lookups (Latest, LatestBatch) and
	// idempotency keys never cross from one provenance to the other.
	Seeded bool
	// IdemKey is "" or an idempotency key, unique per user and provenance:
	// a second Charge with the same (User, Seeded, IdemKey) returns the
	// first release and charges nothing. A seeded and a crypto release may
	// hold the same key independently: a key never makes a request of one
	// provenance receive a list of the other.
	IdemKey string
	// Time is when the release was made; Charge sets it to the current time
	// when zero. Stored with nanosecond precision, returned in UTC.
	Time time.Time
	// Unit is the privacy unit of the release's guarantee (privunit; the
	// zero value, Party, is also what releases recorded before units were
	// stored are read as). Cost and Rho are in this unit: a pair-unit list
	// of cost eps is eps-DP for one protected pair and m x eps for a party
	// with m protected pairs (group privacy). The per-user cap (Cap)
	// compares the sum of Cost over all units with Cap.Eps: a pair-unit
	// cost counts as its eps, so Cap.Eps over a user's mixed releases is a
	// pair-unit bound (a party-unit bound implies the same pair-unit
	// bound); the party-unit bound is PartyCost, capped by Cap.PartyEps.
	// SpendByUnit reports spending per unit.
	Unit privunit.Unit
	// PartyCost is the release's pure-DP epsilon under the party unit
	// (docs/privacy-model.md §16.7.1), math.Inf(1) when it is unbounded (not
	// known to the writer). For a party-unit release it is Cost: Charge sets
	// it (0, the zero value, is read as "= Cost"; any other value but Cost
	// is invalid). For a pair-unit release it must be >= Cost (a pair is a
	// subset of one party's pairs, so the party bound is never smaller) or
	// +Inf: a pair-unit dplp-list list of cost eps released at Laplace scale
	// L1_pair(u)/eps costs eps x L1_party(u)/L1_pair(u) under the party
	// unit (0 when it costs 0). Stored as releases.party_cost (NULL when
	// unbounded; schema 7). Releases recorded before schema 7 read as Cost
	// (party unit) or +Inf (pair unit).
	PartyCost float64
	// Influencers are the protected parties whose protected pairs can change
	// User's utilities; the release's Cost and Rho are added to exposure(w)
	// for each of them. "*" means every party (and makes the other entries
	// redundant: they are dropped). Duplicates are ignored. Empty means no
	// protected pair can change the list (it is then 0-DP whatever its Cost).
	Influencers []string
	// InflDict and InflIdx are the other way to name the influencers: by
	// index into a dictionary (see Dict), the labels InflDict.Label(i) for
	// i in InflIdx, in any order, repeats ignored. A release sets at most
	// one of Influencers and InflIdx ("*" only through Influencers). Charge
	// reads InflIdx during the call only and does not modify it; the
	// release it returns shares it. Releases read back from a store carry
	// Influencers (labels) only.
	InflDict *Dict
	InflIdx  []int32
	// InflBlocks (with InflIdx and InflExcl) is the third way: the
	// influencers are the union of the blocks InflIdx of InflBlocks minus
	// the dictionary entries InflExcl (see Blocks); InflDict is then unset.
	// A store at schema 10 or later records the block ids, others the
	// expanded set. Charge reads InflExcl as it reads InflIdx.
	InflBlocks *Blocks
	InflExcl   []int32

	// inflIDs is the stored encoding of Influencers (schema 8: see
	// influence.go) between scanning a release and resolving its label ids
	// (resolveReleases); nil otherwise.
	inflIDs []byte
}

// ListLookup is implemented by the stores of this package (and the
// Timed wrapper): LatestLists is LatestBatch without the influence sets,
// for callers that serve the lists again and never show who can influence
// them. Use the function LatestLists, which falls back to LatestBatch.
type ListLookup interface {
	// LatestLists returns what LatestBatch returns, every release's
	// Influencers, InflDict, InflIdx, InflBlocks and InflExcl empty.
	LatestLists(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error)
}

// LatestLists is s's LatestBatch without the influence sets (Influencers,
// InflDict, InflIdx, InflBlocks and InflExcl empty): the lists to serve
// again, their ids, costs, units and provenance. A store of this package
// then does not read each set back into labels, which dominated re-serving
// a large batch (about 600 labels a list at a million users); another
// store's LatestBatch is called and its sets are dropped.
func LatestLists(ctx context.Context, s LatestBatcher, users []string, model string, k int, prov Provenance) (map[string]Release, error) {
	if l, ok := s.(ListLookup); ok {
		return l.LatestLists(ctx, users, model, k, prov)
	}
	m, err := s.LatestBatch(ctx, users, model, k, prov)
	for u, r := range m {
		dropInfluence(&r)
		m[u] = r
	}
	return m, err
}

// LatestBatcher is the method of BudgetStore that LatestLists falls back
// to.
type LatestBatcher interface {
	LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error)
}

// dropInfluence empties r's influence set (every form of it).
func dropInfluence(r *Release) {
	r.Influencers, r.InflDict, r.InflIdx, r.InflBlocks, r.InflExcl, r.inflIDs = nil, nil, nil, nil, nil, nil
}

// Provenance is where a release's noise came from. It is recorded with every
// release (Release.Seeded) and is part of every re-serve lookup: a list is
// only ever re-served to a request of the same provenance, so a seeded list
// (a deterministic function of the graph once the seed is known) can never
// come back to a private request, and a private list never turns up in a
// reproducible research run.
type Provenance uint8

const (
	// Crypto: noise from a cryptographic source. The release carries its
	// protected-pair DP guarantee; the only lists a deployment may serve.
	Crypto Provenance = iota
	// Seeded: noise from a seeded generator (research runs). NO privacy
	// guarantee; never re-served to a Crypto request.
	Seeded
)

// ProvenanceOf is Seeded when seeded is true, Crypto otherwise.
func ProvenanceOf(seeded bool) Provenance {
	if seeded {
		return Seeded
	}
	return Crypto
}

// hasInfluencers reports whether r names any influencer.
func (r *Release) hasInfluencers() bool { return len(r.Influencers) > 0 || len(r.InflIdx) > 0 }

// Provenance is r's provenance (Seeded when r.Seeded, else Crypto).
func (r Release) Provenance() Provenance { return ProvenanceOf(r.Seeded) }

func (p Provenance) String() string {
	switch p {
	case Crypto:
		return "crypto"
	case Seeded:
		return "seeded"
	}
	return fmt.Sprintf("Provenance(%d)", uint8(p))
}

// seededCol is p as stored in the releases.seeded column (0 or 1), or an
// ErrInvalid error for an unknown value.
func (p Provenance) seededCol() (int, error) {
	switch p {
	case Crypto:
		return 0, nil
	case Seeded:
		return 1, nil
	}
	return 0, invalid("unknown provenance %d (want ledger.Crypto or ledger.Seeded)", uint8(p))
}

// Cap holds per-user caps. math.Inf(1) means no cap; NaN and negative caps
// are invalid. Every field is a cap (the zero value refuses every charge of
// a positive cost): a caller that wants no party-unit cap sets PartyEps to
// math.Inf(1), as Unlimited does.
type Cap struct {
	// Eps caps the sum of every release's Cost, each in its own unit. A
	// party-unit cost bounds the pair unit too, so with pair-unit releases
	// this is a pair-unit cap (a party-unit one only when every release of
	// the user is party-unit).
	Eps float64
	// Rho caps the sum of every release's Rho (own units, as Eps).
	Rho float64
	// PartyEps caps the user's party-unit total: the sum of every
	// release's PartyCost. A release whose party cost is unbounded
	// (PartyCost = +Inf, or any earlier one of the user's) is refused under
	// a finite PartyEps.
	PartyEps float64
}

// Unlimited is the cap that refuses nothing.
var Unlimited = Cap{Eps: math.Inf(1), Rho: math.Inf(1), PartyEps: math.Inf(1)}

// Unbounded is the PartyCost of a release whose party-unit cost is unknown
// (math.Inf(1)).
var Unbounded = math.Inf(1)

// ErrBudgetExhausted is the error a refused charge wraps: errors.Is(err,
// ErrBudgetExhausted) holds and errors.As gives the *BudgetError.
var ErrBudgetExhausted = errors.New("privacy budget exhausted")

// ErrIdemConflict is returned (wrapped) when an idempotency key is reused by
// the same user for a different (Model, K): the stored release is not the
// answer to the new request.
var ErrIdemConflict = errors.New("idempotency key already used for a different release")

// ErrInvalid is wrapped by every error about an invalid argument.
var ErrInvalid = errors.New("invalid argument")

// BudgetError describes a refused charge. Nothing was recorded.
type BudgetError struct {
	User  string
	Spent float64 // user's total pure epsilon before this charge (own units)
	Cost  float64 // the epsilon asked for (the release's own unit)
	Rho   float64 // user's total rho before this charge
	RhoC  float64 // the rho asked for
	// PartySpent is the user's party-unit total before this charge
	// (+Inf when some release's party cost is unbounded); PartyCost the
	// release's party-unit cost (+Inf: unbounded).
	PartySpent, PartyCost float64
	// Unit is the release's privacy unit.
	Unit privunit.Unit
	Cap  Cap
}

// PartyRefused reports whether the party-unit cap (Cap.PartyEps) refused
// the charge.
func (e *BudgetError) PartyRefused() bool {
	return e.Spent+e.Cost <= e.Cap.Eps && e.Rho+e.RhoC <= e.Cap.Rho && !(e.PartySpent+e.PartyCost <= e.Cap.PartyEps)
}

func (e *BudgetError) Error() string {
	switch {
	case !(e.Spent+e.Cost <= e.Cap.Eps):
		return fmt.Sprintf("ledger: %v for user %q: spent eps %g + cost %g > cap %g (sum of every release's own-unit cost; this release is %s-unit)", ErrBudgetExhausted, e.User, e.Spent, e.Cost, e.Cap.Eps, e.Unit)
	case !(e.Rho+e.RhoC <= e.Cap.Rho):
		return fmt.Sprintf("ledger: %v for user %q: rho %g + %g > cap %g", ErrBudgetExhausted, e.User, e.Rho, e.RhoC, e.Cap.Rho)
	case math.IsInf(e.PartyCost, 1):
		return fmt.Sprintf("ledger: %v for user %q under the party unit: this %s-unit release's party-unit cost is unbounded, the party-unit cap is %g", ErrBudgetExhausted, e.User, e.Unit, e.Cap.PartyEps)
	case math.IsInf(e.PartySpent, 1):
		return fmt.Sprintf("ledger: %v for user %q under the party unit: the user's party-unit spending is unbounded (a pair-unit release without a party-unit cost), the party-unit cap is %g", ErrBudgetExhausted, e.User, e.Cap.PartyEps)
	}
	return fmt.Sprintf("ledger: %v for user %q under the party unit: party eps %g + this %s-unit release's party cost %g > party cap %g", ErrBudgetExhausted, e.User, e.PartySpent, e.Unit, e.PartyCost, e.Cap.PartyEps)
}

// Unwrap makes errors.Is(err, ErrBudgetExhausted) hold.
func (e *BudgetError) Unwrap() error { return ErrBudgetExhausted }

// Spend is one user's running totals.
type Spend struct {
	User     string
	Spent    float64 // total pure-DP epsilon charged, each release in its own unit (a pair-unit bound)
	Rho      float64 // total zCDP rho charged (own units)
	Releases int     // number of recorded releases (0-cost ones included)
	Seeded   int     // how many of them used a seeded generator (no guarantee)
	// PartySpent is the sum of the bounded party-unit costs (PartyCost) of
	// the user's releases; PartyUnbounded counts the releases whose party
	// cost is unbounded (then the party-unit total, PartyTotal, is +Inf).
	PartySpent     float64
	PartyUnbounded int
}

// PartyTotal is the user's party-unit epsilon: PartySpent, or +Inf when
// some release's party cost is unbounded.
func (s Spend) PartyTotal() float64 {
	if s.PartyUnbounded > 0 {
		return math.Inf(1)
	}
	return s.PartySpent
}

// Exposure is what a coalition of users can learn about a protected party
// (privacy-model §6): the sums of Cost and Rho over every release whose
// Influencers contain Party or "*". The entry with Party "*" is the exposure
// of every party not listed.
type Exposure struct {
	Party    string
	Eps, Rho float64
}

// ChargeResult is the outcome of one item of a ChargeBatch: Release and Fresh
// as Charge returns them, or Err (a *BudgetError, or an ErrInvalid /
// ErrIdemConflict error) when the item was refused.
type ChargeResult struct {
	Release Release
	Fresh   bool
	Err     error
}

// Store is a durable privacy-budget ledger: the budget accounts
// (BudgetStore), the service's token hashes (TokenStore) and users' own
// protected marks (MarkStore) of one database. All methods are safe for
// concurrent use by goroutines, processes and replicas sharing the store.
// The stores Open and OpenWith return are one type implementing every part
// (and IdemFinder, UserMarker and UnitSpender); code that needs only one
// part should ask for that part, so that a decorator or a test double
// implements only what it is used for.
type Store interface {
	BudgetStore
	TokenStore
	MarkStore

	// SchemaVersion returns the store's schema version.
	SchemaVersion(ctx context.Context) (int, error)
	// Close releases the store's connections.
	Close() error
}

// BudgetStore is the accounting part of a Store: it charges releases
// against per-user caps, re-serves recorded lists and reports spending and
// exposure. (release.Store, the release path's two calls, is a subset.)
type BudgetStore interface {
	// Charge records a fresh release, in ONE transaction:
	//   - if r.IdemKey != "" and (r.User, r.Provenance(), r.IdemKey) is
	//     already recorded, it returns the stored release with fresh=false
	//     and charges nothing (ErrIdemConflict if the stored release has
	//     another Model or K). Keys are looked up within r's provenance
	//     only: a release of the other provenance holding the same key is
	//     ignored, never returned;
	//   - otherwise, if spent(user)+r.Cost > cap.Eps, rho(user)+r.Rho >
	//     cap.Rho or party(user)+r.PartyCost > cap.PartyEps (party(user)
	//     is +Inf once a release with an unbounded party cost is recorded,
	//     so under a finite cap.PartyEps an unbounded release is refused),
	//     it returns a *BudgetError and records nothing;
	//   - otherwise it records the release, adds r.Cost and r.Rho to the
	//     user's totals, and commits (the influencers are recorded with the
	//     release; Exposure adds the release to exposure(w) when it next runs).
	// It returns (stored release with ID and Time set, true, nil) only after
	// the commit is durable. Invalid releases or caps give an ErrInvalid error.
	Charge(ctx context.Context, r Release, cap Cap) (Release, bool, error)
	// ChargeBatch charges many releases (of any users) in one transaction,
	// in order, each exactly as Charge would given the ones before it.
	// Refused items get Err set and do not abort the others. The error is
	// non-nil only when the transaction itself failed (then nothing was
	// recorded and the results are nil).
	ChargeBatch(ctx context.Context, rs []Release, cap Cap) ([]ChargeResult, error)
	// Latest returns the newest release of (user, model, k) whose
	// provenance is prov: the list to serve again at no cost to a request
	// of that provenance (re-serving is post-processing). A seeded release
	// is never returned for prov == Crypto, whatever is newer. An unknown
	// prov is an ErrInvalid error.
	Latest(ctx context.Context, user, model string, k int, prov Provenance) (Release, bool, error)
	// LatestBatch is Latest for many users at once (one query per chunk of
	// users): the newest release of (user, model, k) of provenance prov
	// for every user that has one. Batch releases use it instead of one
	// lookup per user.
	LatestBatch(ctx context.Context, users []string, model string, k int, prov Provenance) (map[string]Release, error)
	// Budget returns the user's totals (zero for an unknown user).
	Budget(ctx context.Context, user string) (Spend, error)
	// Users returns the totals of every user with at least one release,
	// sorted by user (byte order).
	Users(ctx context.Context) ([]Spend, error)
	// Exposure first adds every release not yet counted to the exposure
	// rows (each exactly once, even with concurrent charges and folds, from
	// any number of processes), then returns exposure(w) = row(w) + row("*")
	// for every party w
	// named in some release, plus the "*" row itself, largest Eps first (ties:
	// larger Rho, then party); the first top entries when top > 0.
	Exposure(ctx context.Context, top int) ([]Exposure, error)
}

// TokenStore holds the hashes of users' service tokens (serve's bearer
// tokens). Tokens are never stored in clear.
type TokenStore interface {
	// PutToken stores (replaces) the hash of user's service token. Tokens
	// are never stored in clear.
	PutToken(ctx context.Context, user string, hash []byte) error
	// TokenHash returns the stored hash of user's token.
	TokenHash(ctx context.Context, user string) ([]byte, bool, error)
	// RevokeToken deletes user's token (no error if there is none).
	RevokeToken(ctx context.Context, user string) error
}

// MarkStore holds users' own protected labels (marks), which the service
// adds to the protected pairs. See also UserMarker and UserMarks.
type MarkStore interface {
	// SetMarks replaces user's own protected labels (sorted, deduplicated;
	// empty deletes them).
	SetMarks(ctx context.Context, user string, marks []string) error
	// Marks returns every user's protected labels.
	Marks(ctx context.Context) (map[string][]string, error)
}

// Open opens the store named by dsn, creating it when it does not exist
// and migrating its schema when needed: it is OpenWith(ctx, dsn,
// OpenOptions{Create: true}). Use it where creating a ledger is the intent
// (tests, demos, a command run with --create); OpenWith without Create
// refuses a missing store instead of starting an empty ledger. Names:
//
//	sqlite:PATH                      SQLite file PATH
//	sqlite:PATH?synchronous=normal   faster, see OpenSQLite
//	sqlite:PATH?charge_journal=on    the charge journal (OpenOptions.ChargeJournal)
//	postgres://... postgresql://...  a PostgreSQL database (pgx syntax)
//
// A database that has tables but is not a dplp ledger is refused and left
// untouched (ErrNotLedger).
func Open(ctx context.Context, dsn string) (Store, error) {
	return OpenWith(ctx, dsn, OpenOptions{Create: true})
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("ledger: %w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// checkText validates a string stored in a TEXT column (PostgreSQL rejects
// NUL bytes and invalid UTF-8, so both stores do).
func checkText(what, s string, allowEmpty bool) error {
	if s == "" && !allowEmpty {
		return invalid("empty %s", what)
	}
	if !validUTF8(s) {
		return invalid("%s %q is not valid UTF-8", what, s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid("%s %q contains a NUL byte", what, s)
	}
	return nil
}

func checkCap(c Cap) error {
	if math.IsNaN(c.Eps) || c.Eps < 0 || math.IsNaN(c.Rho) || c.Rho < 0 || math.IsNaN(c.PartyEps) || c.PartyEps < 0 {
		return invalid("cap eps=%v rho=%v party eps=%v (want >= 0; +Inf for none)", c.Eps, c.Rho, c.PartyEps)
	}
	return nil
}

// validUTF8 is utf8.ValidString with the short ASCII strings of labels and
// keys checked inline (a release's thirty labels and three keys pass here
// in every charge).
func validUTF8(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.ValidString(s[i:])
		}
	}
	return true
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// normalize validates r and returns the copy Charge records.
func normalize(r Release, now time.Time) (Release, error) {
	if err := checkText("user", r.User, false); err != nil {
		return r, err
	}
	if err := checkText("model", r.Model, true); err != nil {
		return r, err
	}
	if err := checkText("idempotency key", r.IdemKey, true); err != nil {
		return r, err
	}
	if r.K < 1 {
		return r, invalid("release for %q: k=%d (want >= 1)", r.User, r.K)
	}
	if !finiteNonNeg(r.EpsP) {
		return r, invalid("release for %q: eps_p=%v (want finite, >= 0)", r.User, r.EpsP)
	}
	if !finiteNonNeg(r.Cost) {
		return r, invalid("release for %q: cost=%v (want finite, >= 0)", r.User, r.Cost)
	}
	if !finiteNonNeg(r.Rho) {
		return r, invalid("release for %q: rho=%v (want finite, >= 0)", r.User, r.Rho)
	}
	if !r.Unit.Valid() {
		return r, invalid("release for %q: unknown privacy unit %v (want privunit.Party or privunit.Pair)", r.User, r.Unit)
	}
	switch {
	case r.Unit == privunit.Party && r.PartyCost == 0:
		r.PartyCost = r.Cost
	case r.Unit == privunit.Party && r.PartyCost != r.Cost:
		return r, invalid("release for %q: party-unit release with party cost %v != cost %v", r.User, r.PartyCost, r.Cost)
	case math.IsNaN(r.PartyCost) || !(r.PartyCost >= r.Cost):
		return r, invalid("release for %q: %v-unit release with party cost %v (want >= cost %v, or ledger.Unbounded when unknown)", r.User, r.Unit, r.PartyCost, r.Cost)
	}
	if len(r.List) > r.K {
		return r, invalid("release for %q: list of %d labels is longer than k=%d", r.User, len(r.List), r.K)
	}
	for i, l := range r.List {
		if !validUTF8(l) {
			return r, invalid("release for %q: label %d (%q) is not valid UTF-8", r.User, i, l)
		}
	}
	r.List = append([]string{}, r.List...)
	switch {
	case (len(r.InflIdx) > 0 || len(r.InflExcl) > 0) && len(r.Influencers) > 0:
		return r, invalid("release for %q: influencers given both as labels and as dictionary indices", r.User)
	case r.InflBlocks != nil && r.InflDict != nil:
		return r, invalid("release for %q: influencers given both as blocks and as dictionary indices", r.User)
	case len(r.InflExcl) > 0 && r.InflBlocks == nil:
		return r, invalid("release for %q: influencer exclusions without blocks", r.User)
	case len(r.InflIdx) > 0 && r.InflBlocks != nil:
		if err := r.InflBlocks.check(r.User, r.InflIdx, r.InflExcl); err != nil {
			return r, err
		}
	case len(r.InflIdx) > 0 && r.InflDict == nil:
		return r, invalid("release for %q: influencer indices without a dictionary", r.User)
	case len(r.InflIdx) > 0:
		if err := r.InflDict.check(r.User, r.InflIdx); err != nil {
			return r, err
		}
	default:
		infl, err := normInfluencers(r.User, r.Influencers)
		if err != nil {
			return r, err
		}
		r.Influencers, r.InflDict, r.InflIdx, r.InflBlocks, r.InflExcl = infl, nil, nil, nil, nil
	}
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC()
	if y := r.Time.Year(); y < 1 || y > 9999 {
		return r, invalid("release for %q: time %v out of range", r.User, r.Time)
	}
	r.ID = 0
	return r, nil
}

// plainLabel reports whether s is non-empty ASCII without NUL bytes: valid
// as an influencer label with one cheap pass (the common case).
func plainLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= 0x80 {
			return false
		}
	}
	return s != ""
}

func normInfluencers(user string, in []string) ([]string, error) {
	sorted := true // strictly increasing: already deduplicated (the release path's form)
	star := false
	for i, w := range in {
		if !plainLabel(w) && (w == "" || !utf8.ValidString(w) || strings.IndexByte(w, 0) >= 0) {
			return nil, checkText(fmt.Sprintf("influencer of %q", user), w, false)
		}
		star = star || w == "*"
		sorted = sorted && (i == 0 || in[i-1] < w)
	}
	if star {
		return []string{"*"}, nil
	}
	if sorted {
		return slices.Clone(in), nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// InfluencerLabels returns the labels of r's influencers, sorted
// bytewise and deduplicated, whichever way r names them (Influencers or
// InflDict and InflIdx); ["*"] when "*" is one of them.
func (r Release) InfluencerLabels() []string {
	if len(r.InflIdx) > 0 && r.InflBlocks != nil {
		return r.InflBlocks.dict.labels(r.InflBlocks.expand(r.InflIdx, r.InflExcl))
	}
	if len(r.InflIdx) > 0 && r.InflDict != nil {
		return r.InflDict.labels(r.InflIdx)
	}
	if slices.Contains(r.Influencers, "*") {
		return []string{"*"}
	}
	out := slices.Clone(r.Influencers)
	slices.Sort(out)
	return slices.Compact(out)
}
