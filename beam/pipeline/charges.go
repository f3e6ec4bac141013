package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/privunit"
)

// Charges. The pipeline writes one charge per user with the idempotency key
// run:<run-id>:<user>. The key depends only on the run id (fixed by the
// driver when the pipeline is built) and the user, never on which worker
// or attempt produced the record, so a retried bundle, a re-run of the
// whole pipeline with the same run id, or a second import of the same file
// charges each user at most once: ledger.Store.ChargeBatch returns the
// first release for a (user, key) it has already recorded.

// ApplyResult summarises ApplyCharges.
type ApplyResult struct {
	Fresh, Again int
	Spent        float64
	Refused      []string
}

// ReadCharges reads a charges file.
func ReadCharges(ctx context.Context, path string) ([]Charge, error) {
	rc, err := openRead(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var out []Charge
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<30)
	line := 0
	for sc.Scan() {
		line++
		var c Charge
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

func openRead(ctx context.Context, path string) (io.ReadCloser, error) {
	if !hasScheme(path) {
		return os.Open(path)
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		fs.Close()
		return nil, err
	}
	return rc, nil
}

// Release converts a charge to the ledger's record (with its privacy unit:
// party unless the charge names one).
func (c *Charge) Release() (ledger.Release, error) {
	u, err := privunit.Parse(c.Unit)
	if err != nil {
		return ledger.Release{}, fmt.Errorf("user %s: %w", c.User, err)
	}
	// The party-unit cost: the charge's own when it carries one (pair-unit
	// lists with evidence cn: cost x L1_party(u)/L1_pair(u), as release
	// records it), else the cost for party-unit charges, and unbounded for a
	// pair-unit one that costs something (evidence jc: the pipeline does not
	// join the party bound's inputs), which a party-unit cap
	// (ledger.Cap.PartyEps) refuses (docs/LEDGER.md).
	pc := c.Cost
	switch {
	case c.PartyCost != nil:
		pc = *c.PartyCost
	case u == privunit.Pair && c.Cost > 0:
		pc = ledger.Unbounded
	}
	return ledger.Release{User: c.User, Model: c.Model, K: c.K, EpsP: c.EpsP, List: c.List, Cost: c.Cost, Rho: c.Rho,
		Seeded: c.Seeded, IdemKey: c.IdemKey, Influencers: c.Influencers, Unit: u, PartyCost: pc}, nil
}

// line renders the charge's output line for list (the stored list) at
// cost, with provenance seeded: a dplp-list line when the charge has a
// unit, else a per-pick one.
func (c *Charge) line(list []string, cost float64, seeded bool) (string, error) {
	if c.Unit != "" {
		return RenderListLine(c.User, list, c.K, cost, seeded, c.Unit, c.EpsP)
	}
	return RenderLine(c.User, list, c.K, c.EpsP, cost, seeded)
}

// ApplyCharges charges every record of the charges file into the ledger
// store dsn (in transactions of 256, each user capped at budget eps) and
// then writes the lists of the users whose charge was accepted to out, in
// the recommend command's JSONL format: the stored list, with the cost
// charged by this call (0 when the key was already recorded) and the
// stored provenance ("seeded"). Nothing is written to out before every
// charge is committed. Refused users get no line. The uncharged lists file
// (if uncharged != "") is removed.
//
// Provenance never mixes: the ledger looks idempotency keys up within the
// charge's provenance (ledger.Release.Seeded), so a private charge never
// receives a seeded list stored under the same key; ApplyCharges checks it
// again and fails, naming the user and key and writing nothing, if a
// returned release has the other provenance.
func ApplyCharges(ctx context.Context, dsn, chargesPath string, budget float64, uncharged, out string) (ApplyResult, error) {
	var res ApplyResult
	cs, err := ReadCharges(ctx, chargesPath)
	if err != nil {
		return res, err
	}
	st, err := ledger.Open(ctx, dsn)
	if err != nil {
		return res, err
	}
	defer st.Close()
	cp := ledger.Cap{Eps: budget, Rho: ledger.Unlimited.Rho, PartyEps: ledger.Unlimited.PartyEps} // own-unit cap only
	var finals []Final
	const batch = 256
	for lo := 0; lo < len(cs); lo += batch {
		hi := min(lo+batch, len(cs))
		rs := make([]ledger.Release, 0, hi-lo)
		for i := lo; i < hi; i++ {
			r, err := cs[i].Release()
			if err != nil {
				return res, fmt.Errorf("%s:%d: %w", chargesPath, i+1, err)
			}
			rs = append(rs, r)
		}
		cr, err := st.ChargeBatch(ctx, rs, cp)
		if err != nil {
			return res, err
		}
		for j, c := range cr {
			ch := &cs[lo+j]
			if c.Err != nil {
				if errors.Is(c.Err, ledger.ErrBudgetExhausted) {
					res.Refused = append(res.Refused, ch.User)
					continue
				}
				return res, fmt.Errorf("%s:%d: charge of user %s: %w", chargesPath, lo+j+1, ch.User, c.Err)
			}
			if c.Release.Seeded != ch.Seeded {
				return res, fmt.Errorf("%s:%d: user %s: key %s already holds a %s release, this charge is %s: use a new --run-id (a seeded list is never served as a private one)",
					chargesPath, lo+j+1, ch.User, ch.IdemKey, provenance(c.Release.Seeded), provenance(ch.Seeded))
			}
			cost := 0.0
			if c.Fresh {
				cost = c.Release.Cost
				res.Fresh++
				res.Spent += cost
			} else {
				res.Again++
			}
			line, err := ch.line(c.Release.List, cost, c.Release.Seeded)
			if err != nil {
				return res, err
			}
			finals = append(finals, Final{U: int32(len(finals)), Line: line})
		}
	}
	if err := writeLines(ctx, out, finals, func(x *Final) string { return x.Line }); err != nil {
		return res, err
	}
	if uncharged != "" && !hasScheme(uncharged) {
		os.Remove(uncharged)
	}
	return res, nil
}

func provenance(seeded bool) string {
	if seeded {
		return "seeded (research)"
	}
	return "private"
}

// Remove deletes the file at path (local, or on a Beam file system that
// can remove files).
func Remove(ctx context.Context, path string) error {
	if !hasScheme(path) {
		return os.Remove(path)
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	rm, ok := fs.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("%s: the file system cannot remove files", path)
	}
	return rm.Remove(ctx, path)
}
