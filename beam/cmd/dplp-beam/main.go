// Command dplp-beam is dplp's batch release on Apache Beam: one top-K list
// per user of the graph.
//
// Private release (deployment): without --seed every user's noise comes
// from crypto/rand on the workers (exact sampler), --store is required, and
// a list is written to --out only after its charge is committed to the
// store; every line says "seeded":false.
//
//	go run ./cmd/dplp-beam --graph G --protected P [--nodes FILE] --model M --k K --out FILE --store DSN \
//	    [--user-budget EPS] [--charges FILE] [--run-id ID] [--runner prism|direct|flink|spark|dataflow ...]
//
// Seeded release (research only, NO privacy guarantee): with --seed N the
// lists are byte-identical to `dplp recommend --all --seed N --format
// jsonl`, every line and charge is marked "seeded":true, and the ledger
// records them as seeded (never served to a private request).
//
// Per-pick models (dplp, dplp-pub) and list-level ones (dplp-list: one
// Laplace release of the private evidence per list, charged the model's
// eps per list whatever K, in its unit) are both released. When the model
// records the fingerprint of its training data (meta.data), the pipeline
// computes the input's (--data-check) and the driver prints recommend's
// notice when they differ.
//
// See docs/BEAM.md.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/dplp/dplp/beam/pipeline"
	"github.com/dplp/dplp/model"
)

var (
	graphPath  = flag.String("graph", "", "edge list (local path, gs:// or s3://; .gz and .zst decompressed)")
	protPath   = flag.String("protected", "", "protection marks, one pair per line (empty: none); their labels are nodes (isolated if no edge names them)")
	nodesPath  = flag.String("nodes", "", "node list, one label per line (empty: none): declared nodes, isolated if no edge names them")
	modelPath  = flag.String("model", "", "model file written by dplp train (read by the driver, shipped in the pipeline)")
	k          = flag.Int("k", 10, "list length K")
	seed       = flag.String("seed", "", "seed of the per-user generators: a reproducible research run, NOT for deployment (lines and charges marked seeded); empty: a private release with crypto noise (needs --store)")
	outPath    = flag.String("out", "", "output JSONL lists, one line per user, user labels in byte order (recommend --all's order)")
	chargePath = flag.String("charges", "", "output JSONL charges (default: <out>.charges.jsonl; \"-\": none)")
	runID      = flag.String("run-id", "", "run id of the idempotency keys run:<run-id>:<user> (default: seeded runs a hash of the model, inputs, K and seed; private runs a fresh random id, printed)")
	hubChunk   = flag.Int("hub-chunk", pipeline.DefaultHubChunk, "salting block: a node of degree d becomes ceil(d/B)^2 wedge tasks")
	outShards  = flag.Int("out-shards", 1, "write the lists (and charges) as this many files <out>-00000-of-0000N, consecutive ranges of users in label byte order (1: one file, gathered on one worker; seeded runs without --store only)")
	store      = flag.String("store", "", "apply the charges to this ledger (sqlite:PATH or postgres DSN) after the run; lists are then written to --out only once charged (required without --seed)")
	budget     = flag.Float64("user-budget", math.Inf(1), "with --store: refuse charges that take a user past this eps")
	dataCheck  = flag.Bool("data-check", true, "compute the input's data fingerprint (protect.Fingerprint) and note, as dplp recommend does, when the model was trained on other data; gathers the encoded graph (labels, public edges, marks) on one worker: --data-check=false for graphs too large for one worker's memory")
)

func main() {
	flag.Parse()
	beam.Init()
	if err := run(context.Background(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dplp-beam:", err)
		if e, ok := err.(exitErr); ok {
			os.Exit(e.code)
		}
		os.Exit(1)
	}
}

type exitErr struct {
	code int
	msg  string
}

func (e exitErr) Error() string { return e.msg }

func run(ctx context.Context, stderr io.Writer) error {
	if *graphPath == "" || *modelPath == "" || *outPath == "" {
		return fmt.Errorf("--graph, --model and --out are required")
	}
	if *hubChunk < 1 {
		return fmt.Errorf("--hub-chunk must be >= 1, got %d", *hubChunk)
	}
	if *k < 1 {
		return fmt.Errorf("--k must be >= 1, got %d", *k)
	}
	// --out (and the files beside it) must be regular files or not exist:
	// checked before any work, so a bad target leaves no temporary files.
	for _, p := range []string{*outPath, *outPath + ".uncharged", *outPath + ".charges.jsonl", *outPath + ".data-fingerprint"} {
		if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file (a directory, device or pipe is never replaced)", p)
		}
	}
	var sd *uint64
	if *seed != "" {
		v, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return fmt.Errorf("--seed %q: %w", *seed, err)
		}
		sd = &v
	} else if *store == "" {
		return fmt.Errorf("a private release (no --seed) needs --store: no list leaves unless its charge is committed to the ledger (use --seed N for a research run)")
	}
	mb, err := os.ReadFile(*modelPath)
	if err != nil {
		return err
	}
	charges := *chargePath
	switch charges {
	case "":
		charges = *outPath + ".charges.jsonl"
	case "-":
		charges = ""
	}
	if *store != "" && charges == "" {
		return fmt.Errorf("--store needs the charges file (do not give --charges -)")
	}
	if *store != "" && *outShards > 1 {
		return fmt.Errorf("--store applies one charges file: use --out-shards 1 (or apply the shards' charges separately)")
	}
	rid := *runID
	switch {
	case rid != "":
	case sd != nil:
		h := sha256.New()
		fmt.Fprintf(h, "%x\x00%s\x00%s\x00%d\x00%d", sha256.Sum256(mb), *graphPath, *protPath, *k, *sd)
		if *nodesPath != "" {
			fmt.Fprintf(h, "\x00%s", *nodesPath)
		}
		rid = "beam-" + hex.EncodeToString(h.Sum(nil))[:16]
	default:
		// A private run's lists are fresh draws: a new key space, so a re-run
		// releases (and pays for) new lists. Give the printed id to resume a
		// run whose charges were not all applied.
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		rid = "beam-" + hex.EncodeToString(b[:])
	}
	// Seeded runs with --store, and every private run, write no list before
	// the charges are committed: seeded ones to <out>.uncharged (removed by
	// ApplyCharges), private ones none at all (the charges file carries the
	// lists to the store; ApplyCharges writes --out from the stored lists).
	lists := *outPath
	switch {
	case sd == nil:
		lists = ""
	case *store != "":
		lists = *outPath + ".uncharged"
	}
	fpPath := ""
	if *dataCheck {
		fpPath = *outPath + ".data-fingerprint"
	}
	p, s := beam.NewPipelineWithRoot()
	info, err := pipeline.Build(s, pipeline.Config{Graph: *graphPath, Protected: *protPath, Nodes: *nodesPath, Model: mb, K: *k, Seed: sd,
		Out: lists, Charges: charges, RunID: rid, HubChunk: *hubChunk, OutShards: *outShards, DataFingerprint: fpPath})
	if err != nil {
		return err
	}
	mech := fmt.Sprintf("eps_p %g", info.EpsP)
	if info.ListLevel {
		mech = fmt.Sprintf("dplp-list (evidence %s, Laplace mechanism on the private evidence vector): eps %g per fresh list whatever K, %s unit", strings.ToLower(info.Evidence.String()), info.EpsList, info.Unit)
	}
	if sd != nil {
		fmt.Fprintf(stderr, "dplp-beam: %s on %s, K = %d, %s, seed %d (seeded: NO privacy guarantee, NOT for deployment; lines and charges marked seeded), run id %s\n",
			info.ModelID, info.Kind, *k, mech, *sd, rid)
	} else {
		noise := "crypto noise, exact sampler"
		if info.ListLevel {
			noise = "crypto noise"
		}
		fmt.Fprintf(stderr, "dplp-beam: %s on %s, K = %d, %s, private release (%s), run id %s\n",
			info.ModelID, info.Kind, *k, mech, noise, rid)
	}
	if err := beamx.Run(ctx, p); err != nil {
		return fmt.Errorf("pipeline failed: %w", err)
	}
	if info.Fingerprinted {
		// recommend's notice when the model was trained on other data.
		fp, err := pipeline.ReadFingerprint(ctx, fpPath)
		if err != nil {
			return fmt.Errorf("data fingerprint: %w", err)
		}
		if fp != info.ModelData {
			fmt.Fprintln(stderr, model.OtherDataNote(*modelPath))
		}
		if err := pipeline.Remove(ctx, fpPath); err != nil {
			fmt.Fprintf(stderr, "dplp-beam: warning: could not remove %s: %v\n", fpPath, err)
		}
	}
	if *store == "" {
		where := "charges in " + charges
		if charges == "" {
			where = "no charges file"
		}
		fmt.Fprintf(stderr, "dplp-beam: seeded lists in %s, %s (research output: never serve them)\n", *outPath, where)
		return nil
	}
	res, err := pipeline.ApplyCharges(ctx, *store, charges, *budget, lists, *outPath)
	if err != nil {
		if sd == nil {
			return fmt.Errorf("%w (no list written; %s holds this run's uncharged lists: re-run with --run-id %s to resume, or delete it)", err, charges, rid)
		}
		return err
	}
	if sd == nil {
		// The ledger now holds every accepted list; the charges file would
		// only add a copy of the refused users' uncharged lists.
		if err := pipeline.Remove(ctx, charges); err != nil {
			fmt.Fprintf(stderr, "dplp-beam: warning: could not remove the charges file %s (it holds uncharged lists of refused users): %v\n", charges, err)
		}
	}
	fmt.Fprintf(stderr, "dplp-beam: %d fresh lists charged (%g eps in all), %d already charged under their key, %d refused by the cap; lists in %s\n",
		res.Fresh, res.Spent, res.Again, len(res.Refused), *outPath)
	if len(res.Refused) > 0 {
		return exitErr{3, fmt.Sprintf("%d user(s) refused by the cap (no list written for them): %v", len(res.Refused), res.Refused)}
	}
	return nil
}
