// Package jsonenc appends JSON strings, string arrays and numbers to a byte
// slice exactly as encoding/json encodes them (HTML-safe escaping included),
// without reflection or allocation. It exists for the hot paths that write
// one small JSON value per released list (the JSON lines of recommend --all,
// the ledger's list column), where encoding/json's reflection cost about as
// much as the rest of the line. Every function's output is byte-identical
// to json.Marshal of the same value; the tests check it against
// encoding/json on arbitrary inputs.
package jsonenc

import (
	"encoding/json"
	"math"
	"strconv"
)

// plainByte[c] is whether encoding/json writes byte c of a string unchanged:
// ASCII from space to DEL except '"', '\\' and the HTML-escaped '<', '>' and
// '&' (TestPlainEveryByte).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// plain reports whether encoding/json writes every byte of s unchanged (one
// table lookup per byte: every label of every released list passes here).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// AppendString appends s as a JSON string. Strings that need escaping (or
// hold non-ASCII or invalid UTF-8) are encoded by encoding/json itself.
func AppendString(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // never fails for a string
	return append(b, enc...)
}

// AppendStrings appends ss as a JSON array of strings; nil is "null", as
// encoding/json writes a nil slice.
func AppendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// AppendFloat appends a finite f as encoding/json writes a float64: the
// shortest representation that round-trips, in 'f' format unless the
// magnitude is below 1e-6 or at least 1e21, with a one-digit negative
// exponent written without its leading zero ("1e-07" becomes "1e-7").
// NaN and infinities have no JSON form: they append null (encoding/json
// refuses them with an error; callers pass finite values).
func AppendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
