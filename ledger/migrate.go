package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migration is one schema version. Both stores get the same tables and
// columns; only the ID column and the blob type are spelled differently.
type migration struct {
	version     int
	description string
	stmts       []string // with {{ID}} and {{BLOB}} placeholders; see also dialectStmts
}

var migrations = []migration{
	{1, "releases, per-user spending, per-party exposure", []string{
		`CREATE TABLE releases (
			id {{ID}},
			user_id TEXT NOT NULL,
			model TEXT NOT NULL,
			k INTEGER NOT NULL CHECK (k >= 1),
			list TEXT NOT NULL,
			eps_p DOUBLE PRECISION NOT NULL CHECK (eps_p >= 0),
			cost DOUBLE PRECISION NOT NULL CHECK (cost >= 0),
			rho DOUBLE PRECISION NOT NULL CHECK (rho >= 0),
			seeded INTEGER NOT NULL CHECK (seeded IN (0, 1)),
			idem_key TEXT,
			created TEXT NOT NULL,
			influencers TEXT NOT NULL
		)`,
		`CREATE UNIQUE INDEX releases_idem ON releases (user_id, idem_key)`,
		`CREATE INDEX releases_latest ON releases (user_id, model, k, id)`,
		`CREATE TABLE spend (
			user_id TEXT PRIMARY KEY,
			spent DOUBLE PRECISION NOT NULL DEFAULT 0,
			rho DOUBLE PRECISION NOT NULL DEFAULT 0,
			releases BIGINT NOT NULL DEFAULT 0,
			seeded BIGINT NOT NULL DEFAULT 0
		)`,
		`CREATE TABLE exposure (
			party TEXT PRIMARY KEY,
			eps DOUBLE PRECISION NOT NULL DEFAULT 0,
			rho DOUBLE PRECISION NOT NULL DEFAULT 0
		)`,
	}},
	{2, "service tokens (hashes only) and users' protected marks", []string{
		`CREATE TABLE tokens (
			user_id TEXT PRIMARY KEY,
			hash {{BLOB}} NOT NULL,
			created TEXT NOT NULL
		)`,
		`CREATE TABLE marks (
			user_id TEXT PRIMARY KEY,
			labels TEXT NOT NULL
		)`,
	}},
	{3, "exposure folded from the release records on demand, not in every charge", []string{
		// Releases recorded before this migration are already in the
		// exposure table: they default to folded.
		`ALTER TABLE releases ADD COLUMN folded INTEGER NOT NULL DEFAULT 1 CHECK (folded IN (0, 1))`,
		`CREATE INDEX releases_unfolded ON releases (id) WHERE folded = 0`,
	}},
	{4, "provenance-aware re-serve: idempotency keys unique per (user, provenance), latest lookups by provenance", []string{
		// A seeded (research) release and a crypto (deployment) one never
		// answer each other's requests: each provenance has its own key
		// namespace, so a private request whose key (the automatic sticky
		// key included) was used by a seeded run gets a private list of its
		// own. Existing keys stay unique: (user, key) unique implies
		// (user, seeded, key) unique.
		`DROP INDEX releases_idem`,
		`CREATE UNIQUE INDEX releases_idem_prov ON releases (user_id, seeded, idem_key)`,
		`DROP INDEX releases_latest`,
		`CREATE INDEX releases_latest_prov ON releases (user_id, model, k, seeded, id)`,
	}},
	{5, "CHECK constraints on running totals: spend and exposure never negative, seeded <= releases", nil}, // dialectStmts
	{6, "privacy unit of each release (party or pair; releases recorded before are party-unit)", []string{unitMigration}},
	{7, "party-unit cost of each release and party-unit totals per user (pair-unit releases recorded before: unbounded)", partyMigration},
	{8, "influencer sets stored compactly: labels once in influencer_labels, per release the delta-coded label ids (releases recorded before keep their JSON arrays)", labelMigration},
	{9, "influencer sets written Elias-Fano coded behind a format marker (schema-8 sets and JSON arrays still read; no table changes)", efMigration},
	{10, "influence sets recorded as unions of shared blocks (influence_blocks: each distinct block once; earlier sets still read)", blockMigration},
	{11, "idempotency keys indexed only where set: releases without a key (fresh and batch lists, most of them) no longer enter the unique index", []string{
		// Uniqueness is unchanged: NULL keys never conflicted (both
		// dialects treat NULLs as distinct in a unique index), and every
		// lookup by key says idem_key = ?, which implies the index's
		// condition, so both planners still use it (TestIdemIndexPartial).
		`DROP INDEX releases_idem_prov`,
		`CREATE UNIQUE INDEX releases_idem_key ON releases (user_id, seeded, idem_key) WHERE idem_key IS NOT NULL`,
	}},
	{12, "the charge journal's applied sequence number (charge_journal: records of PATH-charges up to it are in the tables)", journalMigration},
}

// dialectStmts holds the statements of migrations that differ between the
// dialects, by version and dialect; they replace the migration's stmts.
var dialectStmts = map[int]map[string][]string{
	5: {
		// SQLite cannot add a CHECK to an existing table: the two tables
		// are rebuilt (no index, trigger, view or foreign key refers to
		// them; the copy runs in the migration's write transaction). A row
		// that already violates a constraint makes the migration fail and
		// leaves the store at version 4 (dplp ledger verify names the row).
		"sqlite": {
			`CREATE TABLE spend_v5 (
				user_id TEXT PRIMARY KEY,
				spent DOUBLE PRECISION NOT NULL DEFAULT 0,
				rho DOUBLE PRECISION NOT NULL DEFAULT 0,
				releases BIGINT NOT NULL DEFAULT 0,
				seeded BIGINT NOT NULL DEFAULT 0,
				CONSTRAINT spend_nonneg CHECK (spent >= 0 AND rho >= 0 AND releases >= 0 AND seeded >= 0 AND seeded <= releases)
			)`,
			`INSERT INTO spend_v5 (user_id, spent, rho, releases, seeded) SELECT user_id, spent, rho, releases, seeded FROM spend`,
			`DROP TABLE spend`,
			`ALTER TABLE spend_v5 RENAME TO spend`,
			`CREATE TABLE exposure_v5 (
				party TEXT PRIMARY KEY,
				eps DOUBLE PRECISION NOT NULL DEFAULT 0,
				rho DOUBLE PRECISION NOT NULL DEFAULT 0,
				CONSTRAINT exposure_nonneg CHECK (eps >= 0 AND rho >= 0)
			)`,
			`INSERT INTO exposure_v5 (party, eps, rho) SELECT party, eps, rho FROM exposure`,
			`DROP TABLE exposure`,
			`ALTER TABLE exposure_v5 RENAME TO exposure`,
		},
		"postgres": {
			`ALTER TABLE spend ADD CONSTRAINT spend_nonneg CHECK (spent >= 0 AND rho >= 0 AND releases >= 0 AND seeded >= 0 AND seeded <= releases)`,
			`ALTER TABLE exposure ADD CONSTRAINT exposure_nonneg CHECK (eps >= 0 AND rho >= 0)`,
		},
	},
}

// statements returns m's statements for dialect, placeholders replaced.
func (m migration) statements(dialect string) []string {
	stmts := m.stmts
	if d, ok := dialectStmts[m.version]; ok {
		stmts = d[dialect]
	}
	out := make([]string, len(stmts))
	for i, st := range stmts {
		out[i] = dialectSQL(dialect, st)
	}
	return out
}

// LatestSchema is the schema version this package writes.
var LatestSchema = migrations[len(migrations)-1].version

// ErrSchemaTooNew is wrapped by Open's error for a store written by a newer dplp.
var ErrSchemaTooNew = errors.New("store schema is newer than this dplp")

func dialectSQL(dialect, stmt string) string {
	id, blob := "INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB"
	if dialect == "postgres" {
		id, blob = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "BYTEA"
	}
	return strings.NewReplacer("{{ID}}", id, "{{BLOB}}", blob).Replace(stmt)
}

const createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version INTEGER PRIMARY KEY,
	description TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.queryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v)
	return v, err
}

// migrate brings the schema to version upto (LatestSchema in production;
// tests stop earlier) in one write transaction, and refuses a store whose
// schema is newer than this package knows. lock, when non-empty, is run
// first in the transaction to serialise concurrent migrators. A database
// with tables that is not a dplp ledger is refused (ErrNotLedger) and one
// without tables is an ErrNoLedger error unless create is set; both are
// decided inside the transaction, so concurrent creators agree.
func migrate(ctx context.Context, b backend, upto int, lock string, create bool) error {
	return b.write(ctx, func(q querier) error {
		if lock != "" {
			if err := q.exec(ctx, lock); err != nil {
				return err
			}
		}
		kind, detail, err := classify(ctx, q, b.name())
		if err != nil {
			return err
		}
		switch {
		case kind == kindForeign:
			return fmt.Errorf("%w: %s; it was left untouched", ErrNotLedger, detail)
		case kind == kindEmpty && !create:
			return fmt.Errorf("%w (the database has no tables; nothing was created)", ErrNoLedger)
		}
		if err := q.exec(ctx, createMigrations); err != nil {
			return err
		}
		cur, err := schemaVersion(ctx, q)
		if err != nil {
			return err
		}
		if cur > LatestSchema {
			return fmt.Errorf("ledger: %w: the %s store has schema version %d, this dplp knows versions up to %d; upgrade dplp to use this store (it was left untouched)",
				ErrSchemaTooNew, b.name(), cur, LatestSchema)
		}
		for _, m := range migrations {
			if m.version <= cur || m.version > upto {
				continue
			}
			for _, st := range m.statements(b.name()) {
				if err := q.exec(ctx, st); err != nil {
					return fmt.Errorf("migration %d (%s) failed, the store was left at version %d: %w", m.version, m.description, cur, err)
				}
			}
			if err := q.exec(ctx, "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
				m.version, m.description, fmtTime(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
}
