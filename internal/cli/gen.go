package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"
)

// genModelFlags are the flags that belong to one model only; giving one to
// another model is an error rather than silently ignored.
var genModelFlags = map[string][]string{
	"latent": {"dim", "mean-degree", "radius", "coords"},
	"ba":     {"m"},
	"er":     {"p", "edges"},
}

func newGenCmd() *cobra.Command {
	var (
		out, coords string
		n, dim, m   int
		meanDeg, r  float64
		p           float64
		edges       int64
		seed        uint64
	)
	cmd := &cobra.Command{
		Use:   "gen latent|ba|er --out FILE [flags]",
		Short: "Generate a seeded synthetic graph as an edge list",
		Long: `Generates a synthetic graph and writes it as an edge list ("u v" lines; .gz or
.zst output by extension; --out - writes uncompressed to standard output):
  latent  the latent-space model of the paper's Section 5: --n points uniform in the
          --dim-dimensional ball of unit volume, an edge iff distance < --radius (or the
          radius giving --mean-degree, boundary effects ignored); --coords FILE writes
          the latent coordinates ("label x1 x2 ...") for oracle rankings.
  ba      Barabasi-Albert preferential attachment, --m edges per new node.
  er      Erdos-Renyi G(n, p) with --p, or G(n, m) with --edges.
Every flag is validated before anything is written. Output files are replaced
atomically and must be regular files (or not exist yet). Requests whose memory
estimate exceeds 8 GiB are refused.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"latent", "ba", "er"},
		RunE: func(cmd *cobra.Command, args []string) error {
			model := args[0]
			own, ok := genModelFlags[model]
			if !ok {
				return fmt.Errorf("unknown model %q (want latent, ba or er)", model)
			}
			fl := cmd.Flags()
			for other, names := range genModelFlags {
				if other == model {
					continue
				}
				for _, name := range names {
					if fl.Changed(name) {
						return fmt.Errorf("--%s is for the %s model, not %s (%s takes --n --seed --out and --%s)", name, other, model, model, strings.Join(own, " --"))
					}
				}
			}
			if out == "" {
				return fmt.Errorf("--out FILE is required (- for standard output)")
			}
			if n < 2 {
				return fmt.Errorf("--n must be >= 2, got %d", n)
			}
			var rad float64
			switch model {
			case "latent":
				if dim < 1 {
					return fmt.Errorf("--dim must be >= 1, got %d", dim)
				}
				if fl.Changed("radius") {
					if fl.Changed("mean-degree") {
						return fmt.Errorf("give either --radius or --mean-degree, not both")
					}
					if err := checkPos("radius", r); err != nil {
						return err
					}
					rad = r
				} else {
					if err := checkPos("mean-degree", meanDeg); err != nil {
						return err
					}
					var err error
					if rad, err = gen.RadiusForMeanDegree(n, dim, meanDeg); err != nil {
						return err
					}
				}
				if coords != "" && (coords == out || coords == "-" && out == "-") {
					return fmt.Errorf("--coords and --out must be different files")
				}
			case "ba":
				if m < 1 || m >= n {
					return fmt.Errorf("--m must be in [1, n-1] = [1, %d], got %d", n-1, m)
				}
			case "er":
				hasP, hasE := fl.Changed("p"), fl.Changed("edges")
				switch {
				case hasP && hasE:
					return fmt.Errorf("give either --p or --edges, not both")
				case hasP:
					if math.IsNaN(p) || !(p > 0 && p <= 1) {
						return fmt.Errorf("--p must be in (0,1], got %v", p)
					}
				case hasE:
					if np := int64(n) * int64(n-1) / 2; edges < 1 || edges > np {
						return fmt.Errorf("--edges must be in [1, n(n-1)/2] = [1, %d], got %d", np, edges)
					}
				default:
					return fmt.Errorf("er needs --p or --edges")
				}
			}
			for _, path := range []string{out, coords} {
				if path != "" && path != "-" {
					if err := atomicfile.Check(path); err != nil {
						return err
					}
				}
			}
			rng := randx.Seeded(seed)
			var g *graph.Graph
			var lg *gen.LatentGraph
			var err error
			var desc string
			switch model {
			case "latent":
				if lg, err = gen.Latent(n, dim, rad, rng); err == nil {
					g = lg.Graph
				}
				desc = fmt.Sprintf("latent n=%d dim=%d radius=%s seed=%d", n, dim, fmtG(rad), seed)
			case "ba":
				g, err = gen.BarabasiAlbert(n, m, rng)
				desc = fmt.Sprintf("ba n=%d m=%d seed=%d", n, m, seed)
			case "er":
				if fl.Changed("edges") {
					g, err = gen.ErdosRenyiM(n, edges, rng)
					desc = fmt.Sprintf("er n=%d edges=%d seed=%d", n, edges, seed)
				} else {
					g, err = gen.ErdosRenyi(n, p, rng)
					desc = fmt.Sprintf("er n=%d p=%s seed=%d", n, fmtG(p), seed)
				}
			}
			if err != nil {
				return err
			}
			write := func(path string, fn func(io.Writer) error) error {
				if path == "-" {
					bw := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<20)
					if err := fn(bw); err != nil {
						return err
					}
					return bw.Flush()
				}
				return writeFile(path, fn)
			}
			if err := write(out, func(w io.Writer) error {
				if _, err := fmt.Fprintf(w, "# generated by dplp gen %s\n", desc); err != nil {
					return err
				}
				return gen.WriteEdgeList(w, g)
			}); err != nil {
				return err
			}
			if coords != "" {
				if err := write(coords, func(w io.Writer) error { return writeCoords(w, lg) }); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d nodes (%d with at least one edge), %d edges (%s)\n", out, g.N(), countNonIsolated(g), g.M(), desc)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "output edge list, required (.gz/.zst compress; - for standard output)")
	f.StringVar(&coords, "coords", "", "latent: also write coordinates to this file")
	f.IntVar(&n, "n", 1000, "number of nodes (>= 2)")
	f.IntVar(&dim, "dim", 2, "latent: dimension D (>= 1)")
	f.Float64Var(&meanDeg, "mean-degree", 10, "latent: target mean degree (sets the radius), > 0")
	f.Float64Var(&r, "radius", 0, "latent: connection radius r > 0 (instead of --mean-degree)")
	f.IntVar(&m, "m", 3, "ba: edges attached per new node, in [1, n-1]")
	f.Float64Var(&p, "p", 0, "er: edge probability in (0,1] (G(n,p))")
	f.Int64Var(&edges, "edges", 0, "er: exact number of edges (G(n,m)), instead of --p")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	return cmd
}

// fmtG formats a float in the shortest form that reads back exactly.
func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func countNonIsolated(g *graph.Graph) int {
	c := 0
	for u := 0; u < g.N(); u++ {
		if g.Degree(int32(u)) > 0 {
			c++
		}
	}
	return c
}

// writeFile writes through a compressor chosen by extension, replacing path
// atomically (internal/atomicfile: a regular file or none, temporary file,
// fsync, rename), and reports every write and close error, so a full disk is
// never silent and a failed run leaves the old file (or none) behind.
func writeFile(path string, fn func(io.Writer) error) error {
	err := atomicfile.Write(path, func(bw io.Writer) error {
		var w io.Writer = bw
		var zc io.Closer
		switch {
		case strings.HasSuffix(path, ".gz"):
			z := gzip.NewWriter(bw)
			w, zc = z, z
		case strings.HasSuffix(path, ".zst"):
			z, err := zstd.NewWriter(bw)
			if err != nil {
				return err
			}
			w, zc = z, z
		}
		if err := fn(w); err != nil {
			return err
		}
		if zc != nil {
			return zc.Close()
		}
		return nil
	})
	if err != nil && !errors.Is(err, atomicfile.ErrNotRegular) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

func writeCoords(w io.Writer, lg *gen.LatentGraph) error {
	var b []byte
	for u := 0; u < lg.N(); u++ {
		b = append(b[:0], lg.Label(int32(u))...)
		for _, x := range lg.Point(int32(u)) {
			b = append(b, ' ')
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
