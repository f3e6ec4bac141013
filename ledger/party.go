package ledger

import "math"

// The party-unit cost of every release (docs/privacy-model.md §16.7.1):
// schema version 7 adds releases.party_cost (NULL: unbounded) and the
// users' party-unit totals spend.party_spent (the sum of the bounded party
// costs) and spend.party_unbounded (how many releases have an unbounded
// one). Releases recorded before it: party-unit ones cost their cost under
// the party unit; pair-unit ones did not record their party cost, so it is
// unbounded (a finite party cap then refuses their user's further
// releases, the conservative reading).

// partySchema is the schema version that added the party-unit columns.
const partySchema = 7

// partyMigration is migration 7 (both dialects: ADD COLUMN with a constant
// default and a column CHECK, and UPDATE with correlated subqueries, are
// valid in SQLite and PostgreSQL).
var partyMigration = []string{
	`ALTER TABLE releases ADD COLUMN party_cost DOUBLE PRECISION CHECK (party_cost >= 0)`,
	`UPDATE releases SET party_cost = cost WHERE unit = 'party'`,
	`ALTER TABLE spend ADD COLUMN party_spent DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (party_spent >= 0)`,
	`ALTER TABLE spend ADD COLUMN party_unbounded BIGINT NOT NULL DEFAULT 0 CHECK (party_unbounded >= 0)`,
	`UPDATE spend SET
		party_spent = COALESCE((SELECT SUM(r.party_cost) FROM releases r WHERE r.user_id = spend.user_id), 0),
		party_unbounded = (SELECT COUNT(*) FROM releases r WHERE r.user_id = spend.user_id AND r.party_cost IS NULL)`,
}

// schemaLevel is the schema version a store was opened at: LatestSchema
// except in tests (openAt), where older stores lack the later columns.
type schemaLevel int

func (v schemaLevel) hasUnit() bool  { return v == 0 || int(v) >= unitSchema }
func (v schemaLevel) hasParty() bool { return v == 0 || int(v) >= partySchema }

// partyCostCol is the releases column expression read as PartyCost: -1
// stands for NULL (unbounded), so both drivers scan a plain float.
const partyCostCol = "COALESCE(party_cost, -1)"

// partyCostArg is the party_cost parameter of r: NULL when unbounded.
func partyCostArg(pc float64) any {
	if math.IsInf(pc, 1) {
		return nil
	}
	return pc
}

// partyCostOf reads partyCostCol.
func partyCostOf(v float64) float64 {
	if v < 0 {
		return math.Inf(1)
	}
	return v
}

// addParty adds one release's party cost to a bounded sum and an
// unbounded count.
func addParty(sum *float64, unb *int64, pc float64) {
	if math.IsInf(pc, 1) {
		*unb++
	} else {
		*sum += pc
	}
}
