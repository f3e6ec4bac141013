package embed

import (
	"sync"
	"sync/atomic"
)

// progressMeter turns concurrent Add calls into serialised, monotone calls
// of a user callback.
type progressMeter struct {
	fn    func(done, total int)
	total int
	done  atomic.Int64
	mu    sync.Mutex
	last  int
}

func newProgress(fn func(done, total int), total int) *progressMeter {
	return &progressMeter{fn: fn, total: total}
}

func (p *progressMeter) add(k int) {
	if p == nil || p.fn == nil {
		return
	}
	d := int(p.done.Add(int64(k)))
	p.mu.Lock()
	if d > p.last {
		p.last = d
		p.fn(min(d, p.total), p.total)
	}
	p.mu.Unlock()
}
