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
	"github.com/dplp/dplp/protect"
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
	"marks":  {"graph", "sigma", "non-edges"},
}

// genOptions holds the flag values of the gen command and, after validate,
// the model and the latent radius.
type genOptions struct {
	out, coords string
	n, dim, m   int
	meanDeg, r  float64
	p           float64
	edges       int64
	seed        uint64

	graph           string  // marks: the graph to mark
	sigma, nonEdges float64 // marks: fractions of edges and of each node's non-edges

	model string
	rad   float64
}

func newGenCmd() *cobra.Command {
	o := &genOptions{}
	cmd := &cobra.Command{
		Use:   "gen latent|ba|er|marks --out FILE [flags]",
		Short: "Generate a seeded synthetic graph as an edge list, or protection marks for a graph",
		Long: `Generates a synthetic graph and writes it as an edge list ("u v" lines; .gz or
.zst output by extension; --out - writes uncompressed to standard output):
  latent  the latent-space model of the paper's Section 5: --n points uniform in the
          --dim-dimensional ball of unit volume, an edge iff distance < --radius (or the
          radius giving --mean-degree, boundary effects ignored); --coords FILE writes
          the latent coordinates ("label x1 x2 ...") for oracle rankings.
  ba      Barabasi-Albert preferential attachment, --m edges per new node.
  er      Erdos-Renyi G(n, p) with --p, or G(n, m) with --edges.
  marks   protection marks for --graph G: a seeded fraction --sigma of its edges
          and, with --non-edges Y, a fraction Y of each node's non-edges, written
          as a marks file ("a b" lines, labels of G) for --protected. The draw is
          the one --sigma X --protect-seed N makes inside other commands, so
          "gen marks --sigma X --seed N" writes exactly those marks. For test
          deployments: marks drawn from the graph itself are a simulation (they
          depend on the private graph); real marks come from users.
Every flag is validated before anything is written. Output files are replaced
atomically and must be regular files (or not exist yet). Requests whose memory
estimate exceeds 8 GiB are refused.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"latent", "ba", "er", "marks"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd, args[0]); err != nil {
				return err
			}
			if o.model == "marks" {
				return o.runMarks(cmd)
			}
			return o.run(cmd)
		},
	}
	o.register(cmd)
	return cmd
}

func (o *genOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "output edge list, required (.gz/.zst compress; - for standard output)")
	f.StringVar(&o.coords, "coords", "", "latent: also write coordinates to this file")
	f.IntVar(&o.n, "n", 1000, "number of nodes (>= 2)")
	f.IntVar(&o.dim, "dim", 2, "latent: dimension D (>= 1)")
	f.Float64Var(&o.meanDeg, "mean-degree", 10, "latent: target mean degree (sets the radius), > 0")
	f.Float64Var(&o.r, "radius", 0, "latent: connection radius r > 0 (instead of --mean-degree)")
	f.IntVar(&o.m, "m", 3, "ba: edges attached per new node, in [1, n-1]")
	f.Float64Var(&o.p, "p", 0, "er: edge probability in (0,1] (G(n,p))")
	f.Int64Var(&o.edges, "edges", 0, "er: exact number of edges (G(n,m)), instead of --p")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.StringVar(&o.graph, "graph", "", "marks: the graph (edge list or snapshot) to draw marks for")
	f.Float64Var(&o.sigma, "sigma", 0, "marks: fraction of edges marked protected, in [0,1]")
	f.Float64Var(&o.nonEdges, "non-edges", 0, "marks: also mark this fraction of each node's non-edges, in [0,1]")
}

// validate checks every flag for model before anything is written.
func (o *genOptions) validate(cmd *cobra.Command, model string) error {
	o.model = model
	own, ok := genModelFlags[model]
	if !ok {
		return fmt.Errorf("unknown model %q (want latent, ba, er or marks)", model)
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
	if o.out == "" {
		return fmt.Errorf("--out FILE is required (- for standard output)")
	}
	if o.n < 2 {
		return fmt.Errorf("--n must be >= 2, got %d", o.n)
	}
	var err error
	switch model {
	case "marks":
		err = o.validateMarks(cmd)
	case "latent":
		err = o.validateLatent(cmd)
	case "ba":
		if o.m < 1 || o.m >= o.n {
			err = fmt.Errorf("--m must be in [1, n-1] = [1, %d], got %d", o.n-1, o.m)
		}
	case "er":
		err = o.validateER(cmd)
	}
	if err != nil {
		return err
	}
	for _, path := range []string{o.out, o.coords} {
		if path != "" && path != "-" {
			if err := atomicfile.Check(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateLatent checks the latent model's flags and sets the radius.
func (o *genOptions) validateLatent(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if o.dim < 1 {
		return fmt.Errorf("--dim must be >= 1, got %d", o.dim)
	}
	if fl.Changed("radius") {
		if fl.Changed("mean-degree") {
			return fmt.Errorf("give either --radius or --mean-degree, not both")
		}
		if err := checkPos("radius", o.r); err != nil {
			return err
		}
		o.rad = o.r
	} else {
		if err := checkPos("mean-degree", o.meanDeg); err != nil {
			return err
		}
		var err error
		if o.rad, err = gen.RadiusForMeanDegree(o.n, o.dim, o.meanDeg); err != nil {
			return err
		}
	}
	if o.coords != "" && (o.coords == o.out || o.coords == "-" && o.out == "-") {
		return fmt.Errorf("--coords and --out must be different files")
	}
	return nil
}

// validateER checks the Erdos-Renyi model's flags.
func (o *genOptions) validateER(cmd *cobra.Command) error {
	hasP, hasE := cmd.Flags().Changed("p"), cmd.Flags().Changed("edges")
	switch {
	case hasP && hasE:
		return fmt.Errorf("give either --p or --edges, not both")
	case hasP:
		if math.IsNaN(o.p) || !(o.p > 0 && o.p <= 1) {
			return fmt.Errorf("--p must be in (0,1], got %v", o.p)
		}
	case hasE:
		if np := int64(o.n) * int64(o.n-1) / 2; o.edges < 1 || o.edges > np {
			return fmt.Errorf("--edges must be in [1, n(n-1)/2] = [1, %d], got %d", np, o.edges)
		}
	default:
		return fmt.Errorf("er needs --p or --edges")
	}
	return nil
}

// generate draws the graph (and for latent, its coordinates) and describes it.
func (o *genOptions) generate(cmd *cobra.Command) (g *graph.Graph, lg *gen.LatentGraph, desc string, err error) {
	rng := randx.Seeded(o.seed)
	n, seed := o.n, o.seed
	switch o.model {
	case "latent":
		if lg, err = gen.Latent(n, o.dim, o.rad, rng); err == nil {
			g = lg.Graph
		}
		desc = fmt.Sprintf("latent n=%d dim=%d radius=%s seed=%d", n, o.dim, fmtG(o.rad), seed)
	case "ba":
		g, err = gen.BarabasiAlbert(n, o.m, rng)
		desc = fmt.Sprintf("ba n=%d m=%d seed=%d", n, o.m, seed)
	case "er":
		if cmd.Flags().Changed("edges") {
			g, err = gen.ErdosRenyiM(n, o.edges, rng)
			desc = fmt.Sprintf("er n=%d edges=%d seed=%d", n, o.edges, seed)
		} else {
			g, err = gen.ErdosRenyi(n, o.p, rng)
			desc = fmt.Sprintf("er n=%d p=%s seed=%d", n, fmtG(o.p), seed)
		}
	}
	return g, lg, desc, err
}

func (o *genOptions) run(cmd *cobra.Command) error {
	g, lg, desc, err := o.generate(cmd)
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
	if err := write(o.out, func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "# generated by dplp gen %s\n", desc); err != nil {
			return err
		}
		return gen.WriteEdgeList(w, g)
	}); err != nil {
		return err
	}
	if o.coords != "" {
		if err := write(o.coords, func(w io.Writer) error { return writeCoords(w, lg) }); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d nodes (%d with at least one edge), %d edges (%s)\n", o.out, g.N(), countNonIsolated(g), g.M(), desc)
	return nil
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

// validateMarks checks gen marks' flags.
func (o *genOptions) validateMarks(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if o.graph == "" {
		return fmt.Errorf("gen marks needs --graph FILE")
	}
	if !fl.Changed("sigma") {
		return fmt.Errorf("gen marks needs --sigma X (the fraction of edges marked)")
	}
	if fl.Changed("n") {
		return fmt.Errorf("--n is for the graph models, not marks (marks takes --graph --sigma --non-edges --seed --out)")
	}
	if err := checkFrac("sigma", o.sigma); err != nil {
		return err
	}
	return checkFrac("non-edges", o.nonEdges)
}

// runMarks is gen marks: the synthetic marks --sigma draws elsewhere,
// written as a marks file.
func (o *genOptions) runMarks(cmd *cobra.Command) error {
	g, _, err := loadGraph(cmd, o.graph)
	if err != nil {
		return err
	}
	m, err := protect.Synthetic(g, o.sigma, o.nonEdges, randx.Derive(o.seed, 0x70726f74))
	if err != nil {
		return err
	}
	write := func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "# generated by dplp gen marks --sigma %s --non-edges %s --seed %d (synthetic: a simulation)\n", fmtG(o.sigma), fmtG(o.nonEdges), o.seed); err != nil {
			return err
		}
		return m.Write(w, g)
	}
	if o.out == "-" {
		bw := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		err = bw.Flush()
	} else {
		err = writeFile(o.out, write)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d protected pairs on %d nodes\n", o.out, m.Len(), g.N())
	return nil
}
