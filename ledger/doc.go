// Package ledger is the durable privacy-budget ledger of dplp (privacy-model
// §6): every fresh release of a top-K list to a user is recorded together
// with the pure-DP epsilon and the zCDP rho it costs, and the user's running
// totals are checked against per-user caps before anything is recorded.
//
// # Guarantee
//
// A [Store] is safe for concurrent use by many goroutines, by several
// operating-system processes on one SQLite file, and by several replicas on
// one PostgreSQL database. For every user u, the charges a Store ever accepts
// satisfy
//
//	spent(u) = sum of Cost over u's recorded releases <= Cap.Eps
//	rho(u)   = sum of Rho  over u's recorded releases <= Cap.Rho
//
// whenever every Charge on u used that cap (caps are a property of the
// caller's configuration and are not stored). The check and the recording
// happen in one transaction, so no interleaving of concurrent charges can
// over-spend, and a charge that returns without error is durable: it has been
// committed (and, with the default settings, synced to disk) before Charge
// returns. A charge that returns an error has recorded nothing, except that a
// context cancelled or a connection lost during the commit itself leaves the
// outcome unknown; use an idempotency key ([Release].IdemKey) and retry to
// resolve that case without a second charge.
//
// By basic composition, spent(u) bounds what user u learns about any
// protected pair from all of u's lists (each list is Cost-DP). A coalition of
// users learns about a protected party w at most exposure(w), the sum of the
// costs of all releases whose [Release].Influencers contain w or "*"
// (privacy-model §6); [BudgetStore.Exposure] reports it. Exposure is reported, never
// enforced: refusing a user because of exposure would depend on other users'
// edges and leak.
//
// # What is not guaranteed
//
// The ledger accounts; it does not compute costs. A release's Cost and Rho
// must be computed by the caller from invariant (public) data only, as the
// privacy model requires. Releases marked Seeded used a seeded noise
// generator and carry no privacy guarantee at all: they are recorded (and
// charged) so that every output can say so, and must never be deployed. The
// ledger keeps them apart ([Provenance]): [BudgetStore.Latest],
// [BudgetStore.LatestBatch] and idempotency keys only ever answer a request
// with a release of the request's own provenance, so a seeded release is
// never re-served to a crypto-seeded (private) request.
//
// # Stores
//
// A [Store] has three parts, each its own interface: [BudgetStore] (charges,
// re-served lists, spending and exposure), [TokenStore] (hashes of the
// service's tokens) and [MarkStore] (users' own protected marks); code that
// needs one part asks for that part.
//
// [Open] takes "sqlite:PATH" (modernc.org/sqlite, pure Go, WAL journal,
// BEGIN IMMEDIATE write transactions, synchronous=FULL) or a PostgreSQL URL
// "postgres://..." / "postgresql://..." (pgx with a pgxpool pool; row locks
// taken in a fixed order, retry on serialization failure and deadlock,
// synchronous_commit=on for every charge). Both keep their prepared
// statements per connection across transactions. Both stores share one
// versioned schema (table schema_migrations); opening a store written by a
// newer dplp is refused.
// [OpenWith] opens an existing ledger only unless [OpenOptions].Create is set
// (a missing store is an [ErrNoLedger] error and nothing is created), can
// open read-only (never migrating or writing), announces lock waits
// ([OpenOptions].LockWait), and refuses a non-empty database that is not a
// dplp ledger ([ErrNotLedger]); [Open] is OpenWith with Create.
// [DefaultStore] is the CLI's default, independent of the working
// directory. [Verify] checks a store's integrity; [Redact] hides the
// secrets of a store name for logs. [ImportJSON] moves the old account
// JSON ledger into a Store.
//
// See docs/LEDGER.md for the schema, the transactions and the crash-safety
// argument.
package ledger
