package gen

import (
	"bufio"
	"errors"
	"io"
	"strconv"

	"github.com/dplp/dplp/graph"
)

// WriteEdgeList writes every undirected edge of g once as a line "u v"
// (node labels, u's id < v's id, in id order). Header comments are the
// caller's business. Output is buffered (1 MiB) and formatted without fmt.
func WriteEdgeList(w io.Writer, g *graph.Graph) error {
	if g == nil {
		return errors.New("gen: nil graph")
	}
	labels := g.Labels()
	bw := bufio.NewWriterSize(w, 1<<20)
	for u := 0; u < g.N(); u++ {
		for _, v := range g.Neighbors(int32(u)) {
			if v <= int32(u) {
				continue
			}
			b := bw.AvailableBuffer()
			if labels == nil {
				b = strconv.AppendInt(b, int64(u), 10)
				b = append(b, ' ')
				b = strconv.AppendInt(b, int64(v), 10)
			} else {
				b = append(b, labels[u]...)
				b = append(b, ' ')
				b = append(b, labels[v]...)
			}
			b = append(b, '\n')
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
