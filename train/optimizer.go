package train

import (
	"fmt"
	"math"
)

// adamStep applies Adam with L2 weight decay to theta using t.grad.
func (t *trainer) adamStep() error {
	c := t.cfg
	t.steps++
	b1c := 1 - math.Pow(c.Beta1, float64(t.steps))
	b2c := 1 - math.Pow(c.Beta2, float64(t.steps))
	for i, g := range t.grad {
		g += c.WeightDecay * t.theta[i]
		t.m[i] = c.Beta1*t.m[i] + (1-c.Beta1)*g
		t.v[i] = c.Beta2*t.v[i] + (1-c.Beta2)*g*g
		t.theta[i] -= c.LR * (t.m[i] / b1c) / (math.Sqrt(t.v[i]/b2c) + c.AdamEps)
	}
	if err := t.setParams(t.theta); err != nil {
		return fmt.Errorf("parameters diverged: %w", err)
	}
	return nil
}
