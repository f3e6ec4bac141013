package score_test

import (
	"fmt"
	"strings"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// One user's best candidates by Adamic-Adar, with the public score s_pub
// (protected pairs do not count as paths; degrees are public degrees, so
// bob weighs more in s_pub) and the invariant sensitivity Delta_s. frank is
// reached by no path: he comes from the zero block.
func ExampleScorer_TopCandidates() {
	g, _, err := graph.Parse(strings.NewReader("alice bob\nalice carol\nbob dave\ncarol dave\nbob erin\ndave frank\n"), "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	bob, _ := g.ID("bob")
	dave, _ := g.ID("dave")
	marks, err := protect.New(g.N(), []graph.Edge{{U: bob, V: dave}}) // bob protects his tie to dave
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, err := score.New(g, marks, score.AA)
	if err != nil {
		fmt.Println(err)
		return
	}
	alice, _ := g.ID("alice")
	top, err := sc.TopCandidates(alice, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d candidates, Delta_s %.3f\n", top.Candidates, top.DeltaS)
	for _, c := range top.Best {
		fmt.Printf("%s s=%.3f s_pub=%.3f\n", g.Label(c.V), c.S, c.Pub)
	}
	// Output:
	// 3 candidates, Delta_s 2.885
	// dave s=2.353 s_pub=1.443
	// erin s=0.910 s_pub=1.443
	// frank s=0.000 s_pub=0.000
}
