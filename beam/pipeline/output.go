package pipeline

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// RecLine is one output line: the recommend command's JSONL line
// (cmd/dplp/internal/cli recLine), keys in that order. Unit and EpsList
// are written for dplp-list models only (eps_p is then 0), as recommend
// writes them: a line without them is a per-pick model's.
type RecLine struct {
	User            string   `json:"user"`
	Recommendations []string `json:"recommendations"`
	K               int      `json:"k"`
	EpsP            float64  `json:"eps_p"`
	Cost            float64  `json:"cost"`
	Seeded          bool     `json:"seeded"`
	Unit            string   `json:"unit,omitempty"`
	EpsList         float64  `json:"eps_list,omitempty"`
}

// Charge is one line of the charges file: a ledger.Release to charge, with
// a deterministic idempotency key. Unit is set for dplp-list charges only
// (the model's privacy unit, "party" or "pair"; EpsP is then the model's
// eps per list, as release records it): its presence is what makes
// ApplyCharges write a dplp-list line. Per-pick charges have none (their
// unit is party, the ledger's zero value).
type Charge struct {
	IdemKey     string   `json:"idem_key"`
	User        string   `json:"user"`
	Model       string   `json:"model"`
	K           int      `json:"k"`
	EpsP        float64  `json:"eps_p"`
	List        []string `json:"list"`
	Cost        float64  `json:"cost"`
	Rho         float64  `json:"rho"`
	Seeded      bool     `json:"seeded"`
	Influencers []string `json:"influencers,omitempty"`
	Unit        string   `json:"unit,omitempty"`
	// PartyCost is a list's party-unit cost when the pipeline knows it
	// (absent: the cost for party-unit charges, unbounded for pair-unit
	// ones).
	PartyCost *float64 `json:"party_cost,omitempty"`
}

// IdemKey is the idempotency key of a user's charge in run runID.
func IdemKey(runID, user string) string { return "run:" + runID + ":" + user }

// marshal is json.Encoder's encoding (HTML-safe escapes, as the CLI's
// encoder) without the trailing newline.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte{'\n'})), nil
}

// RenderLine renders one user's output line (no newline). seeded is the
// list's provenance: true for a seeded (research, no guarantee) list,
// false for a private one; every line says which it is.
func RenderLine(user string, list []string, k int, epsP, cost float64, seeded bool) (string, error) {
	if list == nil {
		list = []string{}
	}
	return marshal(RecLine{User: user, Recommendations: list, K: k, EpsP: epsP, Cost: cost, Seeded: seeded})
}

// RenderListLine renders one user's line for a dplp-list model (no
// newline): recommend's line for such models, eps_p 0 and the model's unit
// and eps per list on every line.
func RenderListLine(user string, list []string, k int, cost float64, seeded bool, unit string, epsList float64) (string, error) {
	if list == nil {
		list = []string{}
	}
	return marshal(RecLine{User: user, Recommendations: list, K: k, Cost: cost, Seeded: seeded, Unit: unit, EpsList: epsList})
}

// writeFn gathers the records of one output shard (a range of users in
// byte order of their labels) on one worker, sorts them by user label,
// bytewise (the order of `dplp recommend --all`, graph.Graph.ByLabel; ties,
// i.e. records without a Key, by U) and writes the shard's lists file and
// charges file. With one shard (the
// default) that is every user on one worker: O(|V| K) labels of memory.
// A retried bundle rewrites both files with the same content; local files
// are written to a temporary name and renamed. An empty Out writes no
// lists file (private runs: only the charges, which ApplyCharges turns
// into lists once committed).
type writeFn struct {
	Out, Charges string
	Shards       int
}

// ShardName is the name of output shard i of n ("path" when n == 1).
func ShardName(path string, i, n int) string {
	if n <= 1 {
		return path
	}
	return fmt.Sprintf("%s-%05d-of-%05d", path, i, n)
}

func (f *writeFn) ProcessElement(ctx context.Context, shard int, it func(*Final) bool) error {
	var all []Final
	var x Final
	for it(&x) {
		all = append(all, x)
	}
	slices.SortFunc(all, func(a, b Final) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.U, b.U)
	})
	if f.Out != "" {
		if err := writeLines(ctx, ShardName(f.Out, shard, f.Shards), all, func(x *Final) string { return x.Line }); err != nil {
			return err
		}
	}
	if f.Charges != "" {
		return writeLines(ctx, ShardName(f.Charges, shard, f.Shards), all, func(x *Final) string { return x.Charge })
	}
	return nil
}

func finalKey(x Final) string { return x.Key }

func keyFinal(x Final) (string, Final) { return x.Key, x }

func oneShard(x Final) (int, Final) { return 0, x }

// shardOfFn sends the user of bytewise rank r to output shard
// floor(r * shards / N), so shard files hold consecutive ranges of users in
// byte order of their labels and their concatenation in shard order is
// the single-file output.
type shardOfFn struct{ Shards int }

func (f *shardOfFn) ProcessElement(key string, ranks func(*int32) bool, finals func(*Final) bool, n int, emit func(int, Final)) error {
	var r int32
	if !ranks(&r) {
		return fmt.Errorf("user %q has no output rank (internal error)", key)
	}
	var x Final
	for finals(&x) {
		emit(int(int64(r)*int64(f.Shards)/int64(max(n, 1))), x)
	}
	return nil
}

func writeLines(ctx context.Context, path string, all []Final, pick func(*Final) string) error {
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		for i := range all {
			bw.WriteString(pick(&all[i]))
			bw.WriteByte('\n')
		}
		return bw.Flush()
	}
	if filepath.IsAbs(path) || !hasScheme(path) {
		// Local: temporary file in the same directory, then rename.
		dir := filepath.Dir(path)
		tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
		if err != nil {
			return err
		}
		if err := write(tmp); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return err
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		return os.Rename(tmp.Name(), path)
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return err
	}
	if err := write(w); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return w.Close()
}

func hasScheme(path string) bool {
	for i, c := range path {
		if c == ':' {
			return i > 0 && i+2 < len(path) && path[i+1] == '/' && path[i+2] == '/'
		}
		if c == '/' {
			return false
		}
	}
	return false
}

// Write writes the output files from the Final records (one per user,
// distinct Keys), in shards ranges of users in byte order of their labels
// (shards <= 1: one file each, exactly path; out or charges "" writes no
// such file). With several shards the users' byte-order ranks are computed
// as the node ids are (ids.go: sample, buckets, prefix sum).
func Write(s beam.Scope, out, charges string, shards int, n, finals beam.PCollection) {
	s = s.Scope("Write")
	var keyed beam.PCollection
	if shards <= 1 {
		keyed = beam.ParDo(s, oneShard, finals)
	} else {
		ranks := rankLabels(s.Scope("OutputOrder"), beam.ParDo(s, finalKey, finals), true)
		byKey := beam.ParDo(s, keyFinal, finals)
		keyed = beam.ParDo(s, &shardOfFn{Shards: shards}, beam.CoGroupByKey(s, ranks, byKey), beam.SideInput{Input: n})
	}
	beam.ParDo0(s, &writeFn{Out: out, Charges: charges, Shards: max(shards, 1)}, beam.GroupByKey(s, keyed))
}
