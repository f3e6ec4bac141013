package evaluate

import (
	"context"
	"errors"
	"testing"

	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/train"
)

// TrainOptions.Context reaches the trainer: cancelling it from the
// observer after the first epoch stops the training with its error.
func TestTrainModelHonoursContext(t *testing.T) {
	s := testSplit(t, protocol.Clean)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := 0
	opt := TrainOptions{Epochs: 5, Context: ctx, OnEpoch: func(train.Progress) {
		reports++
		cancel()
	}}
	m, _, err := TrainModel(s, score.AA, "dplp", 1, opt, 1)
	if !errors.Is(err, context.Canceled) || m != nil || reports != 1 {
		t.Fatalf("model %v, err %v, %d reports: want context.Canceled after one epoch", m != nil, err, reports)
	}
}
