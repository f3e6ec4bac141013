package calib

import "github.com/dplp/dplp/score"

// QueryOf is the calibration's view of a scored query (rigorous mode).
func QueryOf(r *score.Result) Query { return Query{DeltaS: r.DeltaS, SMax: r.SMax} }
