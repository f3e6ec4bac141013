package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The line syntax shared by every text input (edge lists, protection marks,
// score files):
//
//   - a line ends at LF, CRLF or a lone CR; a UTF-8 byte-order mark at the
//     start of the stream is skipped;
//   - fields are maximal runs of bytes other than the separators space, tab,
//     comma, vertical tab and form feed;
//   - a line whose first field starts with '#' or '%' is a comment and a line
//     with no fields is blank; both are skipped (and counted as lines);
//   - every field of a data line must be valid UTF-8 and contain neither a NUL
//     byte nor a double quote: quoted (CSV-style) fields are not supported, so
//     `"New York" Boston` is an error naming the line rather than the labels
//     `"New` and `York"`.

// Byte classes of the tokenizer.
const (
	clsLabel   = iota // ordinary label byte
	clsSep            // field separator
	clsEOL            // CR or LF
	clsSpecial        // NUL, '"' or a non-ASCII byte: checked one by one
)

var byteClass = func() (t [256]uint8) {
	for _, c := range []byte{' ', '\t', ',', '\v', '\f'} {
		t[c] = clsSep
	}
	t['\r'], t['\n'] = clsEOL, clsEOL
	t[0], t['"'] = clsSpecial, clsSpecial
	for c := 0x80; c < 0x100; c++ {
		t[c] = clsSpecial
	}
	return t
}()

// lineFields is one tokenized line.
type lineFields struct {
	tok [3][]byte // the first three fields (aliasing the input)
	n   int       // number of fields; 0 for blank and comment lines
	msg string    // the line's syntax error, "" if none
}

// fieldName names field k (0-based) in messages.
func fieldName(k int) string {
	if k < 2 {
		return "a node label"
	}
	return fmt.Sprintf("column %d", k+1)
}

// nextLine tokenizes the line of b starting at i and returns the index just
// after its terminator (CR, LF or CRLF; or len(b) for a final unterminated
// line). A CR at the very end of b is taken as a complete terminator: callers
// make sure b never ends between the CR and LF of a CRLF.
func nextLine(b []byte, i int, f *lineFields) int {
	f.n, f.msg = 0, ""
	// Leading separators.
	for i < len(b) && byteClass[b[i]] == clsSep {
		i++
	}
	if i < len(b) && (b[i] == '#' || b[i] == '%') {
		return skipLine(b, i)
	}
	for i < len(b) {
		c := byteClass[b[i]]
		if c == clsEOL {
			break
		}
		// A field starts at i.
		j := i
		for j < len(b) {
			c = byteClass[b[j]]
			if c == clsLabel {
				j++
				continue
			}
			if c != clsSpecial {
				break
			}
			switch x := b[j]; {
			case x == 0:
				if f.msg == "" {
					f.msg = fmt.Sprintf("NUL byte in %s (binary file?)", fieldName(f.n))
				}
				j++
			case x == '"':
				if f.msg == "" {
					f.msg = fmt.Sprintf("double quote in %s: quoted fields are not supported (fields are separated by whitespace or commas and may not contain '\"')", fieldName(f.n))
				}
				j++
			default:
				r, size := utf8.DecodeRune(b[j:])
				if r == utf8.RuneError && size <= 1 {
					if f.msg == "" {
						end := j
						for end < len(b) && byteClass[b[end]] != clsSep && byteClass[b[end]] != clsEOL {
							end++
						}
						f.msg = fmt.Sprintf("%s is not valid UTF-8: %q", fieldName(f.n), clip(b[i:end]))
					}
					size = 1
				}
				j += size
			}
		}
		if f.n < 3 {
			f.tok[f.n] = b[i:j]
		}
		f.n++
		i = j
		for i < len(b) && byteClass[b[i]] == clsSep {
			i++
		}
	}
	return skipEOL(b, i)
}

// skipLine returns the index after the terminator of the line containing b[i].
func skipLine(b []byte, i int) int {
	for i < len(b) && byteClass[b[i]] != clsEOL {
		i++
	}
	return skipEOL(b, i)
}

// skipEOL consumes one terminator at b[i] (CR, LF or CRLF), if any.
func skipEOL(b []byte, i int) int {
	if i < len(b) {
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		return i + 1
	}
	return i
}

// check turns a tokenized data line into its error message ("" if it names
// at least two fields and has no syntax error).
func (f *lineFields) check() string {
	if f.msg != "" {
		return f.msg
	}
	if f.n < 2 {
		return fmt.Sprintf("expected two node labels, found one field %q", clip(f.tok[0]))
	}
	return ""
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// blockReader cuts a byte stream into blocks of whole lines.
type blockReader struct {
	r       io.Reader
	carry   []byte // bytes read after the last complete line of the previous block
	started bool
	err     error // sticky read error (io.EOF at the end)
}

// next returns the next block of complete lines, read into buf (grown as
// needed; the result aliases it), of about size bytes or more when a line is
// longer. At the end of the stream the block holds the final line even if it
// is unterminated, and err is io.EOF; after a read error, err is that error
// and the block holds only the complete lines read before it (a partial last
// line is dropped). A UTF-8 byte-order mark at the start is skipped.
func (br *blockReader) next(buf []byte, size int) ([]byte, error) {
	if br.err != nil {
		return nil, br.err
	}
	buf = append(buf[:0], br.carry...)
	br.carry = br.carry[:0]
	if cap(buf) < size {
		nb := make([]byte, len(buf), size)
		copy(nb, buf)
		buf = nb
	}
	searched := 0 // bytes of buf known to hold no line terminator
	for {
		// Fill to capacity or the end of the stream.
		for len(buf) < cap(buf) && br.err == nil {
			k, err := br.r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
			if err != nil {
				br.err = err
			}
		}
		if !br.started && (len(buf) >= len(bom) || br.err != nil) {
			br.started = true
			if bytes.HasPrefix(buf, bom) {
				buf = append(buf[:0], buf[len(bom):]...)
			}
		}
		if br.err == io.EOF {
			return buf, io.EOF
		}
		// Cut after the last terminator; a CR at the very end may be the
		// first half of a CRLF, so it is only a cut point at EOF.
		end := len(buf)
		if end > 0 && buf[end-1] == '\r' && br.err == nil {
			end--
		}
		cut := -1
		if end > searched {
			cut = lastEOL(buf[searched:end])
			if cut >= 0 {
				cut += searched
			}
		}
		if cut >= 0 {
			// The stream's start is behind us once a block is returned: a
			// first block shorter than a byte-order mark holds none, and a
			// mark at the start of a later block is data, not skipped.
			br.started = true
			br.carry = append(br.carry, buf[cut+1:]...)
			if br.err != nil {
				// Keep the error for the next call; drop the partial line.
				br.carry = br.carry[:0]
			}
			return buf[:cut+1], nil
		}
		if br.err != nil {
			return buf[:0], br.err
		}
		// No complete line yet: grow and read more.
		searched = end
		nb := make([]byte, len(buf), 2*cap(buf)+4096)
		copy(nb, buf)
		buf = nb
	}
}

func lastEOL(b []byte) int {
	i := bytes.LastIndexByte(b, '\n')
	// A CR after the last LF is a later terminator.
	if j := bytes.LastIndexByte(b[i+1:], '\r'); j >= 0 {
		return i + 1 + j
	}
	return i
}

// ErrTruncated is wrapped by the error for a compressed file that ends
// before its compressed stream does.
var ErrTruncated = errors.New("truncated compressed file")

// readError is the error for a failed read after line n.
func readError(name string, n int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w (the data ends unexpectedly after line %d)", name, ErrTruncated, n)
	}
	return fmt.Errorf("%s: read error after line %d: %w", name, n, err)
}
