// Command dplp-beam is dplp's batch release on Apache Beam: one private
// top-K list per user of the graph, byte-identical to
// `dplp recommend --all --seed N --format jsonl`.
//
//	go run ./cmd/dplp-beam --graph G --protected P --model M --k K --seed N --out FILE \
//	    [--charges FILE] [--run-id ID] [--store DSN [--user-budget EPS]] [--runner prism|direct|flink|spark|dataflow ...]
//
// See docs/BEAM.md.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/dplp/dplp/beam/pipeline"
)

var (
	graphPath  = flag.String("graph", "", "edge list (local path, gs:// or s3://; .gz and .zst decompressed)")
	protPath   = flag.String("protected", "", "protection marks, one pair per line (empty: none)")
	modelPath  = flag.String("model", "", "model file written by dplp train (read by the driver, shipped in the pipeline)")
	k          = flag.Int("k", 10, "list length K")
	seed       = flag.String("seed", "", "seed of the per-user generators (required; seeded lists are reproducible and NOT for deployment)")
	outPath    = flag.String("out", "", "output JSONL lists, one line per user in id order")
	chargePath = flag.String("charges", "", "output JSONL charges (default: <out>.charges.jsonl; \"-\": none)")
	runID      = flag.String("run-id", "", "run id of the idempotency keys run:<run-id>:<user> (default: a hash of the model, inputs, K and seed)")
	hubChunk   = flag.Int("hub-chunk", pipeline.DefaultHubChunk, "salting block: a node of degree d becomes ceil(d/B)^2 wedge tasks")
	outShards  = flag.Int("out-shards", 1, "write the lists (and charges) as this many files <out>-00000-of-0000N, consecutive user-id ranges in order (1: one file, gathered on one worker)")
	store      = flag.String("store", "", "apply the charges to this ledger (sqlite:PATH or postgres DSN) after the run; lists are then written to --out only once charged")
	budget     = flag.Float64("user-budget", math.Inf(1), "with --store: refuse charges that take a user past this eps")
)

func main() {
	flag.Parse()
	beam.Init()
	if err := run(context.Background()); err != nil {
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

func run(ctx context.Context) error {
	if *graphPath == "" || *modelPath == "" || *outPath == "" {
		return fmt.Errorf("--graph, --model and --out are required")
	}
	if *seed == "" {
		return fmt.Errorf("--seed is required: the pipeline draws each user's noise from release.UserRNG(seed, user) (unseeded Beam releases are not supported yet)")
	}
	sd, err := strconv.ParseUint(*seed, 10, 64)
	if err != nil {
		return fmt.Errorf("--seed: %w", err)
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
	if rid == "" {
		h := sha256.New()
		fmt.Fprintf(h, "%x\x00%s\x00%s\x00%d\x00%d", sha256.Sum256(mb), *graphPath, *protPath, *k, sd)
		rid = "beam-" + hex.EncodeToString(h.Sum(nil))[:16]
	}
	lists := *outPath
	if *store != "" {
		lists = *outPath + ".uncharged"
	}
	p, s := beam.NewPipelineWithRoot()
	info, err := pipeline.Build(s, pipeline.Config{Graph: *graphPath, Protected: *protPath, Model: mb, K: *k, Seed: sd,
		Out: lists, Charges: charges, RunID: rid, HubChunk: *hubChunk, OutShards: *outShards})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dplp-beam: %s on %s, K = %d, eps_p %g, seed %d (seeded: NOT for deployment), run id %s\n",
		info.ModelID, info.Kind, *k, info.EpsP, sd, rid)
	if err := beamx.Run(ctx, p); err != nil {
		return fmt.Errorf("pipeline failed: %w", err)
	}
	if *store == "" {
		fmt.Fprintf(os.Stderr, "dplp-beam: lists in %s, charges in %s (apply them before serving the lists)\n", *outPath, charges)
		return nil
	}
	res, err := pipeline.ApplyCharges(ctx, *store, charges, *budget, lists, *outPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dplp-beam: %d fresh lists charged (%g eps in all), %d already charged under their key, %d refused by the cap; lists in %s\n",
		res.Fresh, res.Spent, res.Again, len(res.Refused), *outPath)
	if len(res.Refused) > 0 {
		return exitErr{3, fmt.Sprintf("%d user(s) refused by the cap (no list written for them): %v", len(res.Refused), res.Refused)}
	}
	return nil
}
