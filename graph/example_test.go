package graph_test

import (
	"fmt"
	"strings"

	"github.com/dplp/dplp/graph"
)

// An edge list becomes a graph with dense ids in order of first appearance;
// the label index is built with it, so lookups from any number of
// goroutines are plain reads.
func ExampleParse() {
	in := "# a comment\nalice bob\nbob carol\ncarol alice\ncarol dave\nalice bob\n"
	g, rep, err := graph.Parse(strings.NewReader(in), "example.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.N(), g.M(), rep.DuplicatesMerged, rep.Notes())
	carol, _ := g.ID("carol")
	var names []string
	for _, v := range g.Neighbors(carol) {
		names = append(names, g.Label(v))
	}
	fmt.Println(strings.Join(names, " "))
	_, ok := g.ID("erin")
	fmt.Println(ok)
	// Output:
	// 4 4 1 [example.txt: 1 repeated or reciprocal lines merged]
	// alice bob dave
	// false
}
