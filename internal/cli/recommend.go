package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/dplp/dplp/account"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

type recRow struct {
	user string
	list []string
	cost float64 // 0 when re-served from the ledger
}

func newRecommendCmd() *cobra.Command {
	var (
		modelPath, path, format, ledgerPath string
		k                                   int
		seed                                uint64
		fresh                               bool
		qf                                  queryFlags
		pf                                  protFlags
		predf                               predFlags
	)
	cmd := &cobra.Command{
		Use:   "recommend --model MODEL --graph FILE --protected FILE (--user LABEL ... | --all) --k K",
		Short: "Release private top-K recommendations with a trained DPLP model",
		Long: `For each user, scores every candidate (non-neighbour) on the graph, applies the
model's compiled monotone transform, and releases a top-K list with the
exponential mechanism (Gumbel top-K) at noise scale 2 Delta_f(u) / eps_p, where
Delta_f(u) is computed exactly from the model's table and the user's invariant
Delta_s(u) and S_max(u). A list of K costs K x eps_p for that user; the output
states eps_p, K and the total spent. Noise is crypto-seeded unless --seed is
given (the output then says it is seeded and not for deployment).

With --ledger FILE, releases are recorded per user: asking again for a user who
already received a list from this model re-serves it at no cost (--fresh
samples anew and is charged again).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if k < 1 {
				return fmt.Errorf("--k must be >= 1, got %d", k)
			}
			if format != "table" && format != "csv" && format != "jsonl" {
				return fmt.Errorf("--format must be table, csv or jsonl, got %q", format)
			}
			if modelPath == "" {
				return fmt.Errorf("--model MODEL is required")
			}
			m, err := model.Load(modelPath)
			if err != nil {
				return err
			}
			raw, err := os.ReadFile(modelPath)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(raw)
			key := "model:" + hex.EncodeToString(sum[:8])
			if _, err := predict.Parse(m.Score); err != nil {
				return fmt.Errorf("%s: %w", modelPath, err)
			}
			g, _, err := loadGraph(cmd, path)
			if err != nil {
				return err
			}
			prot, err := pf.load(g, false)
			if err != nil {
				return err
			}
			users, err := qf.resolve(g, "user")
			if err != nil {
				return err
			}
			var ledger *account.Ledger
			if ledgerPath != "" {
				if ledger, err = account.Load(ledgerPath); err != nil {
					return err
				}
			}
			var seedPtr *uint64
			if cmd.Flags().Changed("seed") {
				seedPtr = &seed
			}
			_, src := randx.New(seedPtr)
			sc, err := predf.fit(m.Score, g, prot)
			if err != nil {
				return err
			}
			sk := sc.Name()
			cfg := calib.Config{Method: calib.Exponential, Kind: sc.Kind(), Eps: m.EpsP, Transform: m}
			if err := cfg.Validate(); err != nil {
				return err
			}
			nw := runtime.GOMAXPROCS(0)
			rngs := make([]*rand.Rand, nw)
			for i := range rngs {
				if seedPtr != nil {
					rngs[i] = randx.Derive(seed, uint64(i))
				} else {
					rngs[i] = randx.Crypto()
				}
			}
			pos := make(map[int32]int, len(users))
			for i, u := range users {
				pos[u] = i
			}
			rows := make([]recRow, len(users))
			todo := make([]int32, 0, len(users))
			for i, u := range users {
				rows[i].user = g.Label(u)
				if ledger != nil && !fresh {
					if list, ok := ledger.Lookup(rows[i].user, key); ok {
						rows[i].list = list
						continue
					}
				}
				todo = append(todo, u)
			}
			rels := make([]calib.Releaser, nw)
			errs := make([]error, nw)
			bar := progress.New(int64(len(todo)), "recommending")
			err = sc.EachWorker(todo, func(w int, wk *score.Worker, r *score.Result) {
				plan := cfg.Plan(calib.QueryOf(r))
				ids, e := rels[w].Release(&plan, wk, r, k, rngs[w], nil)
				if e != nil {
					errs[w] = e
					return
				}
				row := &rows[pos[r.U]]
				for _, v := range ids {
					row.list = append(row.list, g.Label(v))
				}
				row.cost = float64(k) * m.EpsP
				bar.Add(1)
			})
			bar.Finish()
			if err != nil {
				return err
			}
			for _, e := range errs {
				if e != nil {
					return e
				}
			}
			var spent float64
			for i := range rows {
				if rows[i].cost > 0 {
					spent += rows[i].cost
					if ledger != nil {
						if _, err := ledger.Record(rows[i].user, key, m.EpsP, k, rows[i].list); err != nil {
							return err
						}
					}
				}
			}
			if ledger != nil {
				if err := ledger.Save(ledgerPath); err != nil {
					return err
				}
			}
			header := fmt.Sprintf("private top-%d by DPLP (%s on %s, exponential mechanism): eps_p %g per pick, K %d, K x eps_p = %g per fresh list, %g spent in this run over %d fresh lists; %s",
				k, m.Variant, sk, m.EpsP, k, float64(k)*m.EpsP, spent, len(todo), src)
			if ledger != nil {
				header += fmt.Sprintf("; ledger %s: largest per-user total %g", ledgerPath, ledger.MaxSpent())
			}
			return writeRecs(cmd, format, header, rows, m.EpsP, k)
		},
	}
	f := cmd.Flags()
	f.StringVar(&modelPath, "model", "", "model file written by dplp train")
	f.StringVar(&path, "graph", "", "edge list file (the current, private graph)")
	f.IntVar(&k, "k", 30, "recommendations per user (>= 1)")
	f.StringVar(&format, "format", "table", "output: table, csv or jsonl")
	f.Uint64Var(&seed, "seed", 0, "seed the noise (reproducible, NOT for deployment); default crypto-seeded")
	f.StringVar(&ledgerPath, "ledger", "", "privacy budget ledger file (created if missing)")
	f.BoolVar(&fresh, "fresh", false, "with --ledger: sample anew even if a list was released before (charged again)")
	qf.register(cmd, "user")
	pf.register(cmd, "protect-seed")
	predf.register(cmd)
	return cmd
}

func writeRecs(cmd *cobra.Command, format, header string, rows []recRow, eps float64, k int) error {
	bw := bufio.NewWriter(cmd.OutOrStdout())
	switch format {
	case "table":
		fmt.Fprintln(bw, header)
		for _, r := range rows {
			tag := ""
			if r.cost == 0 {
				tag = " (re-served, no cost)"
			}
			fmt.Fprintf(bw, "%s%s: %s\n", r.user, tag, strings.Join(r.list, " "))
		}
	case "csv":
		fmt.Fprintln(cmd.ErrOrStderr(), header)
		cw := csv.NewWriter(bw)
		cw.Write([]string{"user", "rank", "candidate", "eps_p", "k", "cost"})
		for _, r := range rows {
			for i, v := range r.list {
				cw.Write([]string{r.user, strconv.Itoa(i + 1), v, strconv.FormatFloat(eps, 'g', -1, 64), strconv.Itoa(k), strconv.FormatFloat(r.cost, 'g', -1, 64)})
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	case "jsonl":
		fmt.Fprintln(cmd.ErrOrStderr(), header)
		enc := json.NewEncoder(bw)
		for _, r := range rows {
			if err := enc.Encode(map[string]any{"user": r.user, "recommendations": r.list, "eps_p": eps, "k": k, "cost": r.cost}); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
