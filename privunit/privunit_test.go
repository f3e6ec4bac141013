package privunit

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Unit
		err  bool
	}{
		{"", Party, false}, {"party", Party, false}, {" PAIR ", Pair, false}, {"edge", 0, true}, {"parties", 0, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("Parse(%q) = %v, %v", tc.in, got, err)
		}
		if !tc.err {
			if back, _ := Parse(got.String()); back != got {
				t.Errorf("round trip of %v gives %v", got, back)
			}
		}
	}
	if Unit(7).Valid() || !Pair.Valid() {
		t.Error("Valid")
	}
}

func TestGroupCost(t *testing.T) {
	for _, tc := range []struct {
		eps  float64
		m    int
		want float64
	}{{1, 0, 0}, {1, 3, 3}, {0.5, 4, 2}, {2, -1, 0}} {
		if got := GroupCost(tc.eps, tc.m); got != tc.want {
			t.Errorf("GroupCost(%v, %d) = %v, want %v", tc.eps, tc.m, got, tc.want)
		}
	}
}
