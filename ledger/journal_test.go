package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dplp/dplp/privunit"
)

// parkApplier keeps the charge journal's applier from running on its own
// (reads, Close and a batch that records new labels still apply), so that
// charges stay pending.
func parkApplier(t *testing.T) {
	t.Helper()
	every, lists := journalApplyEvery, journalApplyLists
	journalApplyEvery, journalApplyLists = time.Hour, math.MaxInt
	t.Cleanup(func() { journalApplyEvery, journalApplyLists = every, lists })
}

// openJournal opens path's ledger with the charge journal (closed at cleanup
// unless crashed).
func openJournal(t *testing.T, path string) *sqlStore {
	t.Helper()
	st, err := OpenWith(context.Background(), "sqlite:"+path, OpenOptions{Create: true, ChargeJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*sqlStore)
	t.Cleanup(func() {
		if s.j != nil {
			s.Close()
		}
	})
	return s
}

// chargedJournal is a store with the charge journal at a new path, its
// applier parked, after n charges of 0.5 to user "u", all pending.
func chargedJournal(t *testing.T, n int) (*sqlStore, string) {
	t.Helper()
	parkApplier(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := openJournal(t, path)
	for i := range n {
		if _, _, err := s.Charge(context.Background(), testRelease("u", strconv.Itoa(i), 0.5), Unlimited); err != nil {
			t.Fatal(err)
		}
	}
	return s, path
}

// crash ends s as a killed process would: the applier stops where it is,
// nothing pending is applied, the journal file and its lock are let go.
func crash(s *sqlStore) {
	j := s.j
	close(j.stop)
	<-j.done
	j.closeOnce.Do(func() {})
	j.f.Close()
	s.j = nil
	s.b.close()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestJournalRecovery: charges acknowledged by a journaled store that dies
// before applying them are in the ledger when it is next opened for
// writing (without the journal), with their IDs, keys and totals, so the
// cap holds across the crash. The negative control reopens without the
// journal file (what a recovery that skipped it would see): the totals are
// short and a charge over the cap passes, which the first half refuses.
func TestJournalRecovery(t *testing.T) {
	parkApplier(t)
	ctx := ctxT(t)
	for _, control := range []bool{false, true} {
		t.Run(map[bool]string{false: "recovered", true: "control-without-journal"}[control], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			s := openJournal(t, path)
			capEps := Cap{Eps: 3, Rho: math.Inf(1), PartyEps: math.Inf(1)}
			var ids []int64
			for i := range 3 {
				r := testRelease("u", strconv.Itoa(i), 1)
				if i == 2 {
					r.IdemKey = "retry-me"
				}
				got, fresh, err := s.Charge(ctx, r, capEps)
				if err != nil || !fresh {
					t.Fatal(fresh, err)
				}
				ids = append(ids, got.ID)
			}
			if _, _, err := s.Charge(ctx, testRelease("u", "over", 1), capEps); !errors.As(err, new(*BudgetError)) {
				t.Fatalf("4th charge over the cap: %v", err)
			}
			s.j.mu.Lock()
			pending := len(s.j.pending)
			s.j.mu.Unlock()
			if pending != 3 { // the 4th was refused: nothing to append
				t.Fatalf("%d records pending, want the 3 charges", pending)
			}
			crash(s)
			jpath := path + JournalSuffix
			if fileSize(t, jpath) == 0 {
				t.Fatal("the journal file is empty after the crash")
			}
			if control {
				if err := os.Remove(jpath); err != nil {
					t.Fatal(err)
				}
			}
			st, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sp, err := st.Budget(ctx, "u")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = st.Charge(ctx, testRelease("u", "after", 1), capEps)
			refused := errors.As(err, new(*BudgetError))
			if control {
				if sp.Spent == 3 || refused {
					t.Fatalf("control: spent %v, charge over the cap refused %v: the test cannot tell a lost journal", sp.Spent, refused)
				}
				return
			}
			if sp.Spent != 3 || sp.Releases != 3 || !refused {
				t.Fatalf("after recovery: %+v, over-cap charge: %v", sp, err)
			}
			got := releaseIDs(t, st)
			for _, id := range ids {
				if _, ok := got[id]; !ok {
					t.Errorf("acknowledged release %d is missing after recovery", id)
				}
			}
			rel, ok, err := st.(IdemFinder).FindIdem(ctx, "u", "retry-me", Crypto)
			if err != nil || !ok || rel.ID != ids[2] {
				t.Fatalf("the key of a recovered release: %v %v %v", rel.ID, ok, err)
			}
			if fileSize(t, jpath) != 0 {
				t.Fatal("the journal is not emptied after recovery")
			}
			if rep, err := Verify(ctx, st); err != nil || !rep.OK() {
				t.Fatal(rep, err)
			}
		})
	}
}

// TestJournalPendingReads: while charges are pending, Latest, LatestBatch,
// FindIdem, Budget, Users and Exposure see them, and a retried key within
// the pending window charges nothing.
func TestJournalPendingReads(t *testing.T) {
	parkApplier(t)
	ctx := ctxT(t)
	s := openJournal(t, filepath.Join(t.TempDir(), "ledger.db"))
	if _, _, err := s.Charge(ctx, testRelease("warm", "0", 0.5), Unlimited); err != nil { // records the labels first
		t.Fatal(err)
	}
	r := testRelease("u", "a", 0.5)
	r.IdemKey = "k"
	first, fresh, err := s.Charge(ctx, r, Unlimited)
	if err != nil || !fresh {
		t.Fatal(fresh, err)
	}
	again, fresh, err := s.Charge(ctx, r, Unlimited)
	if err != nil || fresh || again.ID != first.ID {
		t.Fatalf("retry while pending: id %d fresh %v err %v (first %d)", again.ID, fresh, err, first.ID)
	}
	sp, err := s.Budget(ctx, "u")
	if err != nil || sp.Spent != 0.5 || sp.Releases != 1 {
		t.Fatalf("budget while pending: %+v %v", sp, err)
	}
	s.j.mu.Lock()
	pending := len(s.j.pending)
	s.j.mu.Unlock()
	if pending != 2 {
		t.Fatalf("%d records pending, want 2 (the retry appends nothing)", pending)
	}
	rel, ok, err := s.Latest(ctx, "u", "test-model", 4, Crypto)
	if err != nil || !ok || rel.ID != first.ID {
		t.Fatalf("Latest: %v %v %v", rel.ID, ok, err)
	}
	// Latest applied everything: charge again and read through the others.
	r2 := testRelease("v", "b", 0.25)
	r2.IdemKey = "k2"
	second, _, err := s.Charge(ctx, r2, Unlimited)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.LatestBatch(ctx, []string{"v"}, "test-model", 4, Crypto); err != nil || m["v"].ID != second.ID {
		t.Fatalf("LatestBatch: %v %v", m, err)
	}
	third, _, err := s.Charge(ctx, testRelease("w", "c", 0.125), Unlimited)
	if err != nil {
		t.Fatal(err)
	}
	// A read of other users' lists leaves w's charge pending; one of w's
	// applies it.
	if m, err := s.LatestBatch(ctx, []string{"u", "v"}, "test-model", 4, Crypto); err != nil || len(m) != 2 {
		t.Fatalf("LatestBatch: %v %v", m, err)
	}
	if st, _ := s.JournalStats(); st.PendingLists != 1 {
		t.Fatalf("a read of u and v applied w's charge: %+v", st)
	}
	if rel, ok, err := s.Latest(ctx, "w", "test-model", 4, Crypto); err != nil || !ok || rel.ID != third.ID {
		t.Fatalf("Latest w: %v %v %v", rel.ID, ok, err)
	}
	if st, _ := s.JournalStats(); st.PendingLists != 0 {
		t.Fatalf("a read of w left its charge pending: %+v", st)
	}
	if _, _, err := s.Charge(ctx, testRelease("w", "c2", 0.125), Unlimited); err != nil {
		t.Fatal(err)
	}
	users, err := s.Users(ctx)
	if err != nil || len(users) != 4 {
		t.Fatalf("Users: %v %v", users, err)
	}
	if _, _, err := s.Charge(ctx, testRelease("x", "d", 2), Unlimited); err != nil {
		t.Fatal(err)
	}
	ex, err := s.Exposure(ctx, 0)
	if err != nil || len(ex) == 0 || ex[0].Eps != 0.5+0.5+0.25+0.125+0.125+2 {
		t.Fatalf("Exposure: %v %v", ex, err)
	}
	if rel, ok, err := s.FindIdem(ctx, "v", "k2", Crypto); err != nil || !ok || rel.ID != second.ID {
		t.Fatalf("FindIdem: %v %v %v", rel.ID, ok, err)
	}
}

// TestJournalExclusive: a store with the charge journal is the ledger's
// only writer. Writers without it share the lock; read-only opens are
// never refused.
func TestJournalExclusive(t *testing.T) {
	defer func(w time.Duration) { journalLockWait = w }(journalLockWait)
	journalLockWait = 50 * time.Millisecond
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	dsn := "sqlite:" + path
	j := openJournal(t, path)
	if _, err := OpenWith(ctx, dsn, OpenOptions{}); !errors.Is(err, ErrLedgerBusy) {
		t.Fatalf("writer beside the journal: %v", err)
	}
	ro, err := OpenWith(ctx, dsn, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only beside the journal: %v", err)
	}
	ro.Close()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := OpenWith(ctx, dsn, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenWith(ctx, dsn, OpenOptions{})
	if err != nil {
		t.Fatalf("two writers without the journal: %v", err)
	}
	defer b.Close()
	if _, err := OpenWith(ctx, dsn, OpenOptions{ChargeJournal: true}); !errors.Is(err, ErrLedgerBusy) {
		t.Fatalf("the journal beside other writers: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(ctx, "sqlite:"+link, OpenOptions{ChargeJournal: true}); !errors.Is(err, ErrLedgerBusy) {
		t.Fatalf("the journal through a symbolic link, beside other writers: %v", err)
	}
	if _, err := OpenWith(ctx, "postgres://localhost/x", OpenOptions{ChargeJournal: true}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the journal on PostgreSQL: %v", err)
	}
}

// TestJournalReset: the applier empties the file once it is past
// journalResetSize, and the ledger stays whole through a crash after.
func TestJournalReset(t *testing.T) {
	defer func(e time.Duration, n int, r int64) {
		journalApplyEvery, journalApplyLists, journalResetSize = e, n, r
	}(journalApplyEvery, journalApplyLists, journalResetSize)
	journalApplyEvery, journalApplyLists, journalResetSize = 2*time.Millisecond, 4, 1
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := openJournal(t, path)
	for i := range 40 {
		if _, _, err := s.Charge(ctx, testRelease("u"+strconv.Itoa(i%5), strconv.Itoa(i), 0.25), Unlimited); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.j.mu.Lock()
		size, pending := s.j.size, len(s.j.pending)
		s.j.mu.Unlock()
		if size == 0 && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal never emptied: size %d, %d pending", size, pending)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 7 {
		if _, _, err := s.Charge(ctx, testRelease("u0", "late"+strconv.Itoa(i), 0.25), Unlimited); err != nil {
			t.Fatal(err)
		}
	}
	crash(s)
	st, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sp, err := st.Budget(ctx, "u0")
	if err != nil || sp.Releases != 15 || sp.Spent != 15*0.25 {
		t.Fatalf("u0 after reset and crash: %+v %v", sp, err)
	}
	if rep, err := Verify(ctx, st); err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
}

// testRecord is a record of n releases with sequence number seq.
func testRecord(seq uint64, n int) *jrecord {
	rec := &jrecord{seq: seq}
	for i := range n {
		rec.rows = append(rec.rows, releaseRow{id: int64(seq*100) + int64(i), user: "u" + strconv.Itoa(i), model: "m", k: 3,
			list: `["a","b","c"]`, epsP: 0.1, cost: 0.5, rho: 0.125, seeded: i%2 == 1, idem: map[bool]string{true: "key"}[i == 0],
			created: fmtTime(time.Unix(int64(seq), 0)), unit: privunit.Pair.String(), partyCost: math.Inf(1), inflIDs: []byte{1, 2, byte(i)}, folded: i%3 == 0})
		rec.users = append(rec.users, "u"+strconv.Itoa(i))
		rec.totals = append(rec.totals, spendRow{spent: float64(seq), rho: 0.5, releases: int64(seq), seeded: 1, partySpent: 2, partyUnb: int64(i)})
	}
	slices.Sort(rec.users) // u0..u9 sort as written for n <= 10
	return rec
}

func frames(recs ...*jrecord) []byte {
	var b []byte
	for _, r := range recs {
		b = appendFrame(b, r)
	}
	return b
}

// TestReadRecords: the log's end, torn last records, damage followed by
// good records, gaps and the applied prefix.
func TestReadRecords(t *testing.T) {
	r1, r2, r3 := testRecord(1, 2), testRecord(2, 1), testRecord(3, 3)
	all := frames(r1, r2, r3)
	end2 := len(frames(r1, r2))
	damaged := slices.Clone(all)
	damaged[frameHeader+3] ^= 0xff // inside record 1's payload
	zeroHead := slices.Clone(all)
	copy(zeroHead[len(frames(r1)):], make([]byte, frameHeader)) // record 2's header unwritten, its payload and record 3 written
	for _, c := range []struct {
		name    string
		data    []byte
		applied uint64
		want    []uint64
		err     string
	}{
		{"empty", nil, 0, nil, ""},
		{"three", all, 0, []uint64{1, 2, 3}, ""},
		{"applied prefix", all, 2, []uint64{3}, ""},
		{"all applied", all, 3, nil, ""},
		{"applied beyond", all, 9, nil, ""},
		{"zeros after", append(slices.Clone(all), make([]byte, 4096)...), 0, []uint64{1, 2, 3}, ""},
		{"last cut short", all[:end2+frameHeader+100], 0, []uint64{1, 2}, ""},
		{"last cut in its header", all[:end2+4], 0, []uint64{1, 2}, ""},
		{"last torn, zeros after", append(slices.Clone(all[:end2+frameHeader+100]), make([]byte, 2048)...), 0, []uint64{1, 2}, ""},
		{"last torn, its tail written", append(append(slices.Clone(all[:end2+frameHeader+50]), make([]byte, 50)...), all[end2+frameHeader+100:]...), 0, []uint64{1, 2}, ""},
		{"damage then good records", damaged, 0, nil, "damaged and a good one follows"},
		{"unwritten header then a good record", zeroHead, 0, nil, "damaged and a good one follows"},
		{"missing first", frames(r2, r3), 0, nil, "records are missing"},
		{"gap", frames(r1, r3), 0, nil, "sequence number 3 after 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readRecords(c.data, c.applied)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for _, r := range got {
				seqs = append(seqs, r.seq)
			}
			if !reflect.DeepEqual(seqs, c.want) {
				t.Fatalf("records %v, want %v", seqs, c.want)
			}
		})
	}
	got, err := readRecords(all, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []*jrecord{r1, r2, r3} {
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("record %d round trip:\n got %+v\nwant %+v", i+1, got[i], want)
		}
	}
	if len(all)%journalAlign != 0 {
		t.Fatalf("frames end at %d, not aligned", len(all))
	}
}

// TestJournalDamagedRefused: an open that finds a damaged record followed
// by good ones refuses, naming the file and offset, and changes nothing.
func TestJournalDamagedRefused(t *testing.T) {
	ctx := ctxT(t)
	s, path := chargedJournal(t, 4)
	crash(s)
	jpath := path + JournalSuffix
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	data[frameHeader+1] ^= 0x55
	if err := os.WriteFile(jpath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenWith(ctx, "sqlite:"+path, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), jpath) || !strings.Contains(err.Error(), "offset 0") || !strings.Contains(err.Error(), "left untouched") {
		t.Fatalf("open with a damaged journal: %v", err)
	}
	after, err := os.ReadFile(jpath)
	if err != nil || !slices.Equal(after, data) {
		t.Fatal("the damaged journal was changed", err)
	}
}

// TestJournalMatchesDirect (differential): the same random batches charged
// through a store with the journal and one without give the same results
// (fresh, refused and why, IDs, replays) and the same ledger afterwards,
// with reads at random moments in between (each applies what is pending).
func TestJournalMatchesDirect(t *testing.T) {
	labels := []string{"10", "9", "a", "b", "200", "3", "x y", "0"}
	d, blocks := testBlocks(t, labels)
	for seed := range uint64(4) {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			ctx := ctxT(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			plain := openDSN(t, sqliteFixture.dsn(t)).(*sqlStore)
			jour := openJournal(t, filepath.Join(t.TempDir(), "ledger.db"))
			capv := Cap{Eps: 2, Rho: 1.5, PartyEps: 3}
			for round := range 40 {
				var rs []Release
				for range 1 + rng.IntN(6) {
					u := "u" + strconv.Itoa(rng.IntN(5))
					cost := []float64{0, 0.125, 0.25, 0.5}[rng.IntN(4)]
					r := Release{User: u, Model: "m", K: 1 + rng.IntN(2), EpsP: cost, Cost: cost, Rho: cost / 4,
						List: []string{"p" + strconv.Itoa(rng.IntN(9))}, Seeded: rng.IntN(5) == 0}
					if rng.IntN(3) == 0 {
						r.IdemKey = "k" + strconv.Itoa(rng.IntN(4))
					}
					if rng.IntN(2) == 0 {
						r.Unit, r.PartyCost = privunit.Pair, cost*2
					}
					switch rng.IntN(4) {
					case 0:
						r.Influencers = []string{"w" + strconv.Itoa(rng.IntN(12)), "w" + strconv.Itoa(rng.IntN(12))}
					case 1:
						r.InflDict, r.InflIdx = d, []int32{int32(rng.IntN(8)), int32(rng.IntN(8))}
					case 2:
						r.InflBlocks, r.InflIdx, r.InflExcl = blocks, []int32{int32(rng.IntN(8))}, []int32{int32(rng.IntN(8))}
					}
					rs = append(rs, r)
				}
				want, err := plain.ChargeBatch(ctx, rs, capv)
				if err != nil {
					t.Fatal(err)
				}
				got, err := jour.ChargeBatch(ctx, rs, capv)
				if err != nil {
					t.Fatal(err)
				}
				for i := range rs {
					if g, w := describeResult(got[i]), describeResult(want[i]); g != w {
						t.Fatalf("round %d item %d:\n journal %s\n  direct %s", round, i, g, w)
					}
				}
				if rng.IntN(4) == 0 {
					u := "u" + strconv.Itoa(rng.IntN(5))
					a, _, err1 := plain.Latest(ctx, u, "m", 1, Crypto)
					b, _, err2 := jour.Latest(ctx, u, "m", 1, Crypto)
					if err1 != nil || err2 != nil || a.ID != b.ID {
						t.Fatalf("Latest %s: %d %v / %d %v", u, a.ID, err1, b.ID, err2)
					}
				}
			}
			for _, read := range []func(Store) (any, error){
				func(s Store) (any, error) { return s.Users(ctx) },
				func(s Store) (any, error) { return s.Exposure(ctx, 0) },
				func(s Store) (any, error) { return s.(UnitSpender).SpendByUnit(ctx) },
			} {
				a, err1 := read(plain)
				b, err2 := read(jour)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
					t.Fatalf("direct %v %v\njournal %v %v", a, err1, b, err2)
				}
			}
			for _, s := range []Store{plain, jour} {
				if rep, err := Verify(ctx, s); err != nil || !rep.OK() {
					t.Fatal(rep, err)
				}
			}
		})
	}
}

// describeResult is a ChargeResult as the differential test compares it
// (times differ between the stores).
func describeResult(r ChargeResult) string {
	if r.Err != nil {
		var be *BudgetError
		if errors.As(r.Err, &be) {
			return fmt.Sprintf("budget %v+%v %v+%v %v+%v", be.Spent, be.Cost, be.Rho, be.RhoC, be.PartySpent, be.PartyCost)
		}
		return "error " + r.Err.Error()
	}
	return fmt.Sprintf("fresh=%v id=%d user=%s list=%v cost=%v", r.Fresh, r.Release.ID, r.Release.User, r.Release.List, r.Release.Cost)
}

// FuzzReadRecords: any bytes decode without a panic, and what decodes
// encodes back to frames that decode to the same records.
func FuzzReadRecords(f *testing.F) {
	f.Add(frames(testRecord(1, 2), testRecord(2, 1)), uint64(0))
	f.Add(frames(testRecord(5, 3))[:300], uint64(4))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, applied uint64) {
		recs, err := readRecords(data, applied)
		if err != nil {
			return
		}
		again, err := readRecords(frames(recs...), 0)
		if len(recs) > 0 && recs[0].seq != 1 {
			return // a prefix was applied: the frames alone start later
		}
		if err != nil || len(again) != len(recs) {
			t.Fatalf("round trip: %d records, then %d (%v)", len(recs), len(again), err)
		}
		for i := range recs {
			if !reflect.DeepEqual(again[i], recs[i]) && !hasNaN(recs[i]) {
				t.Fatalf("record %d: %+v, then %+v", i, recs[i], again[i])
			}
		}
	})
}

func hasNaN(r *jrecord) bool {
	for _, row := range r.rows {
		for _, x := range []float64{row.epsP, row.cost, row.rho, row.partyCost} {
			if math.IsNaN(x) {
				return true
			}
		}
	}
	for _, t := range r.totals {
		for _, x := range []float64{t.spent, t.rho, t.partySpent} {
			if math.IsNaN(x) {
				return true
			}
		}
	}
	return false
}

// TestJournalHealth: JournalStats follows appends and applies; a failed
// append stops every later charge, SchemaVersion (the service's readiness
// check) reports it, and reopening recovers every acknowledged charge.
func TestJournalHealth(t *testing.T) {
	ctx := ctxT(t)
	s, path := chargedJournal(t, 3)
	st, ok := s.JournalStats()
	if !ok || st.PendingLists != 3 || st.PendingRecords != 3 || st.Appended != 3 || st.Applied != 0 || st.FileBytes != journalGrow {
		t.Fatalf("stats while pending: %+v %v", st, ok)
	}
	if _, err := s.Users(ctx); err != nil { // applies
		t.Fatal(err)
	}
	if st, _ = s.JournalStats(); st.PendingLists != 0 || st.Applied != 3 {
		t.Fatalf("stats after a read: %+v", st)
	}
	if _, err := s.SchemaVersion(ctx); err != nil {
		t.Fatal(err)
	}
	s.j.f.Close() // the next append fails
	if _, _, err := s.Charge(ctx, testRelease("u", "x", 0.5), Unlimited); err == nil || !strings.Contains(err.Error(), "could not be written") {
		t.Fatalf("charge with a failing journal: %v", err)
	}
	if _, err := s.SchemaVersion(ctx); err == nil {
		t.Fatal("SchemaVersion is healthy with a broken journal")
	}
	if _, _, err := s.Charge(ctx, testRelease("v", "y", 0.5), Unlimited); err == nil {
		t.Fatal("a charge passed after the journal broke")
	}
	crash(s)
	plain := openDSN(t, "sqlite:"+path)
	if sp, err := plain.Budget(ctx, "u"); err != nil || sp.Releases != 3 {
		t.Fatalf("after reopening: %+v %v", sp, err)
	}
	if _, ok := plain.(JournalStatser).JournalStats(); ok {
		t.Fatal("a store without the journal reports journal stats")
	}
}

// TestJournalState: a read-only store reports a running journaled writer,
// and the records a crashed one left (which it does not see), until a
// writer applies them.
func TestJournalState(t *testing.T) {
	ctx := ctxT(t)
	s, path := chargedJournal(t, 3)
	readState := func() (JournalState, Spend) {
		t.Helper()
		ro, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		st, err := ro.(JournalStater).JournalState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := ro.Budget(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		return st, sp
	}
	if st, _ := readState(); !st.Held {
		t.Fatalf("a running journaled writer is not reported: %+v", st)
	}
	crash(s)
	if st, sp := readState(); st.Held || st.PendingRecords != 3 || st.PendingLists != 3 || sp.Releases != 0 {
		t.Fatalf("after the crash: %+v, the tables show %+v", st, sp)
	}
	w, err := OpenWith(ctx, "sqlite:"+path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if st, sp := readState(); st != (JournalState{}) || sp.Releases != 3 {
		t.Fatalf("after a writer applied the journal: %+v, %+v", st, sp)
	}
	if st, err := w.(JournalStater).JournalState(ctx); err != nil || st != (JournalState{}) {
		t.Fatalf("a writing store's JournalState: %+v %v", st, err)
	}
}
