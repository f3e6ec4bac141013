package jsonenc

import (
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func marshal(t interface{ Fatal(...any) }, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendStringTable(t *testing.T) {
	for _, s := range []string{"", "42", "alice", "a b", `q"uote`, `back\slash`, "<tag>&", "tab\there", "\x00nul", "é", "\u2028", "\xff\xfe", "日本"} {
		if got, want := string(AppendString(nil, s)), marshal(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

// TestMatchesEncodingJSON: byte-identical to encoding/json on arbitrary
// strings (any bytes, not only valid UTF-8), string slices and floats.
func TestMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ss []string
		if rapid.Bool().Draw(t, "non-nil") {
			ss = rapid.SliceOfN(rapid.OneOf(rapid.String(), rapid.StringMatching(`[0-9a-z<>&"\\ ]{0,6}`), rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 6), func(b []byte) string { return string(b) })), 0, 8).Draw(t, "ss")
		}
		if got, want := string(AppendStrings([]byte("x"), ss)), "x"+marshal(t, ss); got != want {
			t.Fatalf("AppendStrings(%q) = %s, encoding/json %s", ss, got, want)
		}
		f := rapid.OneOf(rapid.Float64(), rapid.Float64Range(-1e-5, 1e-5), rapid.Float64Range(1e20, 1e22), rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-7, 1e21, 15, 0.5, 1e-6, 123456789e-15})).Draw(t, "f")
		if math.IsNaN(f) || math.IsInf(f, 0) {
			if got := string(AppendFloat(nil, f)); got != "null" {
				t.Fatalf("AppendFloat(%v) = %s, want null", f, got)
			}
			return
		}
		if got, want := string(AppendFloat(nil, f)), marshal(t, f); got != want {
			t.Fatalf("AppendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	})
}

func BenchmarkAppendStrings(b *testing.B) {
	list := make([]string, 30)
	for i := range list {
		list[i] = "123456"
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendStrings(buf[:0], list)
	}
}

// TestPlainEveryByte: plain is true for exactly the bytes that
// encoding/json writes unchanged (a one-byte string comes out as the byte
// between quotes).
func TestPlainEveryByte(t *testing.T) {
	for c := range 256 {
		s := string([]byte{byte(c)})
		if got, want := plain(s), marshal(t, s) == `"`+s+`"`; got != want {
			t.Errorf("plain(%q) = %v, encoding/json writes it unchanged: %v", s, got, want)
		}
	}
}
