// Package progress shows progress bars on stderr when it is a terminal and
// stays silent otherwise (pipes, CI, files).
package progress

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar counts work units; all methods are safe on a nil *Bar.
type Bar struct{ b *progressbar.ProgressBar }

// Enabled reports whether bars are drawn (stderr is a terminal).
func Enabled() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// New returns a bar over total units with a description, or nil when stderr
// is not a terminal.
func New(total int64, desc string) *Bar {
	if !Enabled() {
		return nil
	}
	return &Bar{progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(io.Writer(os.Stderr)),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)}
}

// Add advances the bar by n units. Safe for concurrent use.
func (b *Bar) Add(n int) {
	if b != nil {
		b.b.Add(n)
	}
}

// Describe changes the bar's description.
func (b *Bar) Describe(s string) {
	if b != nil {
		b.b.Describe(s)
	}
}

// Finish completes and clears the bar.
func (b *Bar) Finish() {
	if b != nil {
		b.b.Finish()
	}
}
