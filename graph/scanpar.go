package graph

import (
	"errors"
	"io"
	"runtime"
	"sync"
)

// ScanPairsParallel is ScanPairs on all cores, for a file whose lines can be
// handled in any order and their results put together in file order (a
// marks file: 30 M lines at 10 M nodes, 4.8 s on one core).
//
// The stream is cut into blocks of whole lines (as Parse cuts it); each block
// is scanned by one worker, which calls fn for each pair with the block's own
// accumulator (a zero T for every block). merge then gets the accumulators
// one at a time in file order, so that appending them gives what a serial
// ScanPairs appending into one value would. fn may run concurrently for
// different blocks and must touch nothing but its accumulator and data that
// nobody writes meanwhile; merge runs in the calling goroutine, never
// concurrently with itself.
//
// Errors are those of ScanPairs, for the first bad line of the file: a
// syntax error, or fn's error wrapped as a *LineError for its line (a
// *LineError fn returns is kept as it is). No block after the one holding
// it is merged. It returns the number of lines, as ScanPairs does.
func ScanPairsParallel[T any](r io.Reader, name string, fn func(acc *T, a, b []byte, extra bool) error, merge func(acc *T)) (int64, error) {
	type part struct {
		lines   int64
		errLine int64 // block-local line of the first bad line, 0 if none
		err     error // its error: fn's, or nil for a syntax error (msg)
		msg     string
		acc     T
	}
	scanBlock := func(data []byte, b *part) {
		var f lineFields
		var line int64
		for i := 0; i < len(data); {
			i = nextLine(data, i, &f)
			line++
			if f.n == 0 && f.msg == "" {
				continue
			}
			if msg := f.check(); msg != "" {
				b.errLine, b.msg = line, msg
				break
			}
			if err := fn(&b.acc, f.tok[0], f.tok[1], f.n > 2); err != nil {
				b.errLine, b.err = line, err
				break
			}
		}
		b.lines = line
	}
	var lines int64
	var err error
	inBlocks(r, func() func([]byte, *part) { return scanBlock }, func(_ []byte, rerr error, b *part) bool {
		if b.errLine > 0 {
			lines += b.errLine
			var le *LineError
			switch {
			case b.err == nil:
				err = &LineError{name, lines, b.msg}
			case errors.As(b.err, &le):
				err = b.err
			default:
				err = &LineError{name, lines, b.err.Error()}
			}
			return false
		}
		lines += b.lines
		merge(&b.acc)
		if rerr != nil && rerr != io.EOF {
			err = readError(name, lines, rerr)
		}
		return rerr == nil
	})
	return lines, err
}

// inBlocks is the pipeline of Parse and ScanPairsParallel. A reader
// goroutine cuts the stream into blocks of whole lines (growing from 64 KiB
// to parseBlockSize, so small inputs stay cheap); one worker per core runs
// its own scan (from newScan) on each block it takes, into the block's
// result; the calling goroutine gets the blocks in stream order (take:
// the block's lines, the read error after them, io.EOF at the clean end,
// and the result) while later ones are still being scanned, and stops when
// take returns false (it must at a read error). A block's bytes are valid
// only until its take returns. internal/par (a pool of independent items)
// cannot express this: blocks are made while the stream is read, with no
// count known in advance.
func inBlocks[R any](r io.Reader, newScan func() func(data []byte, res *R), take func(data []byte, rerr error, res *R) bool) {
	type block struct {
		data []byte
		rerr error
		done chan struct{}
		res  R
	}
	workers := runtime.GOMAXPROCS(0)
	inflight := 2*workers + 2
	free := make(chan []byte, inflight+1)
	work := make(chan *block, inflight)
	ordered := make(chan *block, inflight)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reader
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		br := &blockReader{r: r}
		for size := min(64<<10, parseBlockSize); ; size = min(2*size, parseBlockSize) {
			var buf []byte
			select {
			case buf = <-free:
			default:
			}
			data, err := br.next(buf, size)
			b := &block{data: data, rerr: err, done: make(chan struct{})}
			select {
			case ordered <- b:
			case <-quit:
				return
			}
			select {
			case work <- b:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scan := newScan()
			for b := range work {
				select {
				case <-quit:
				default:
					scan(b.data, &b.res)
				}
				close(b.done)
			}
		}()
	}
	for b := range ordered {
		<-b.done
		if !take(b.data, b.rerr, &b.res) {
			break
		}
		var zero R
		b.res = zero // taken: let it go
		select {
		case free <- b.data[:0]:
		default:
		}
	}
	close(quit)
	for range ordered { // let the reader finish its current send
	}
	wg.Wait()
}
