package ledger

import (
	"context"
	"fmt"

	"github.com/dplp/dplp/privunit"
)

// The privacy unit of every release (docs/privacy-model.md §16): schema
// version 6 adds releases.unit, 'party' or 'pair'. Releases recorded before
// it were all party-unit (per-pick models are calibrated to the party unit),
// so the column defaults to 'party'.

// unitMigration is migration 6 (both dialects: ADD COLUMN with a constant
// default and a CHECK is valid in SQLite and PostgreSQL).
const unitMigration = `ALTER TABLE releases ADD COLUMN unit TEXT NOT NULL DEFAULT 'party' CHECK (unit IN ('party', 'pair'))`

// unitSchema is the schema version that added releases.unit.
const unitSchema = 6

// releaseColsNoUnit are the releases columns Release is read from at a
// schema before unitSchema (releaseColsFor adds the later ones).
const releaseColsNoUnit = "id, user_id, model, k, list, eps_p, cost, rho, seeded, COALESCE(idem_key, ''), created, influencers"

// releaseColsFor is releaseCols, without the columns a store at schema
// level v lacks.
func releaseColsFor(v schemaLevel) string {
	switch {
	case !v.hasUnit():
		return releaseColsNoUnit
	case !v.hasParty():
		return releaseColsNoUnit + ", unit"
	case !v.hasLabels():
		return releaseColsNoUnit + ", unit, " + partyCostCol
	}
	return releaseCols
}

// atSchema records the schema upto a store was opened at (openAt): only
// tests open stores at older schemas; OpenWith migrates to LatestSchema.
func atSchema(upto int) func(*sqlStore, error) (*sqlStore, error) {
	return func(s *sqlStore, err error) (*sqlStore, error) {
		if err == nil {
			s.schema = schemaLevel(upto)
		}
		return s, err
	}
}

// parseUnitCol reads the releases.unit column.
func parseUnitCol(s string) (privunit.Unit, error) {
	switch s {
	case "party":
		return privunit.Party, nil
	case "pair":
		return privunit.Pair, nil
	}
	return 0, fmt.Errorf("stored privacy unit %q (want party or pair)", s)
}

// UnitSpend is the spending recorded under one privacy unit, over every
// user: the sums of Cost and Rho of its releases (each in that unit), how
// many releases, and how many of them were seeded (no guarantee). PartySpent
// is the sum of their bounded party-unit costs (Release.PartyCost) and
// PartyUnbounded the number whose party cost is unbounded.
type UnitSpend struct {
	Unit           privunit.Unit
	Spent          float64
	Rho            float64
	Releases       int
	Seeded         int
	PartySpent     float64
	PartyUnbounded int
}

// UnitSpender is implemented by stores that report spending per privacy
// unit (the stores Open and OpenWith return do). Store does not require it,
// so decorators and test doubles need not implement it.
type UnitSpender interface {
	// SpendByUnit returns the spending of every unit that has at least one
	// release, party first.
	SpendByUnit(ctx context.Context) ([]UnitSpend, error)
}

// SpendByUnit reports spending per unit (UnitSpender).
func (s *sqlStore) SpendByUnit(ctx context.Context) ([]UnitSpend, error) {
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	var out []UnitSpend
	err := s.b.snapshot(ctx, func(q querier) error {
		out = out[:0]
		party := "COALESCE(SUM(party_cost), 0), COALESCE(SUM(CASE WHEN party_cost IS NULL THEN 1 ELSE 0 END), 0)"
		if !s.schema.hasParty() {
			party = "COALESCE(SUM(CASE WHEN unit = 'party' THEN cost ELSE 0 END), 0), COALESCE(SUM(CASE WHEN unit = 'party' THEN 0 ELSE 1 END), 0)"
		}
		rs, err := q.query(ctx, "SELECT unit, COUNT(*), COALESCE(SUM(cost), 0), COALESCE(SUM(rho), 0), COALESCE(SUM(seeded), 0), "+party+" FROM releases GROUP BY unit")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var name string
			var n, seeded, unb int64
			var us UnitSpend
			if err := rs.Scan(&name, &n, &us.Spent, &us.Rho, &seeded, &us.PartySpent, &unb); err != nil {
				return err
			}
			us.PartyUnbounded = int(unb)
			if us.Unit, err = parseUnitCol(name); err != nil {
				return fmt.Errorf("ledger: %w", err)
			}
			us.Releases, us.Seeded = int(n), int(seeded)
			out = append(out, us)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	// party (0) before pair (1)
	if len(out) == 2 && out[0].Unit > out[1].Unit {
		out[0], out[1] = out[1], out[0]
	}
	return out, nil
}

var _ UnitSpender = (*sqlStore)(nil)
