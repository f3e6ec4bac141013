package cli

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Output formats of commands that print rows.
const (
	formatTable = "table" // aligned columns (two spaces apart), or free text lines
	formatCSV   = "csv"   // RFC 4180 rows, a header row first
	formatJSONL = "jsonl" // one JSON value a line (a single --json object is one line)
)

// printer is the one place commands print tabular results: an aligned table
// (text/tabwriter), CSV (encoding/csv) or JSON lines (encoding/json), all
// through one buffered writer. A command makes one printer for the format the
// user chose, writes a header and rows (table, CSV) or values (JSON lines),
// and calls flush once at the end; nothing reaches w before flush except
// what the buffer cannot hold.
type printer struct {
	format string
	bw     *bufio.Writer
	tw     *tabwriter.Writer // table
	cw     *csv.Writer       // CSV
	enc    *json.Encoder     // JSON lines
}

// newPrinter makes a printer writing format (formatTable, formatCSV or
// formatJSONL) to w.
func newPrinter(w io.Writer, format string) *printer {
	p := &printer{format: format, bw: bufio.NewWriter(w)}
	switch format {
	case formatTable:
		p.tw = tabwriter.NewWriter(p.bw, 0, 0, 2, ' ', 0)
	case formatCSV:
		p.cw = csv.NewWriter(p.bw)
	case formatJSONL:
		p.enc = json.NewEncoder(p.bw)
	default:
		panic(fmt.Sprintf("cli: unknown output format %q", format))
	}
	return p
}

// row writes one row of cells: aligned columns in a table, a record in CSV.
// A header is the first row. JSON lines have no rows (use value). Write
// errors stick: they are returned by every later row and by flush.
func (p *printer) row(cells ...string) error {
	switch p.format {
	case formatTable:
		_, err := fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
		return err
	case formatCSV:
		return p.cw.Write(cells)
	}
	return nil
}

// line writes a line of free text in table format, outside the aligned
// columns (the columns written so far are aligned and printed first).
func (p *printer) line(format string, args ...any) error {
	if err := p.tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(p.bw, format+"\n", args...)
	return err
}

// printJSON writes v as one JSON line: the --json output of commands that
// print a single object.
func printJSON(w io.Writer, v any) error {
	p := newPrinter(w, formatJSONL)
	if err := p.value(v); err != nil {
		return err
	}
	return p.flush()
}

// value writes v as one JSON line.
func (p *printer) value(v any) error { return p.enc.Encode(v) }

// jsonLine writes b, one JSON value already encoded, and a newline: what
// value writes for the value b encodes.
func (p *printer) jsonLine(b []byte) error {
	if _, err := p.bw.Write(b); err != nil {
		return err
	}
	return p.bw.WriteByte('\n')
}

// flush writes everything out and reports the first error.
func (p *printer) flush() error {
	switch p.format {
	case formatTable:
		if err := p.tw.Flush(); err != nil {
			return err
		}
	case formatCSV:
		p.cw.Flush()
		if err := p.cw.Error(); err != nil {
			return err
		}
	}
	return p.bw.Flush()
}
