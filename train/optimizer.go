package train

import "fmt"

// adamStep applies Adam with L2 weight decay to theta using t.grad
// (numeric.Adam in the textbook form, with the configured betas).
func (t *trainer) adamStep() error {
	t.adam.Step([][]float64{t.theta}, [][]float64{t.grad})
	if err := t.setParams(t.theta); err != nil {
		return fmt.Errorf("parameters diverged: %w", err)
	}
	return nil
}
