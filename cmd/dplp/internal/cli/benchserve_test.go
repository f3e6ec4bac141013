package cli

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoadPhase runs loadPhase's clients (par.Team) against an operation
// that fails every third call: every request is counted once, as ok or as
// an error, with the first error's text; a cancelled context ends the phase
// before its duration.
func TestLoadPhase(t *testing.T) {
	var calls atomic.Int64
	op := func(*rand.Rand) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("boom")
		}
		return nil
	}
	rep := loadPhase(context.Background(), 3, 20*time.Millisecond, op)
	if rep.Requests != calls.Load() || rep.OK+rep.Errors != rep.Requests || rep.Errors == 0 || rep.FirstError != "boom" {
		t.Fatalf("report %+v after %d calls", rep, calls.Load())
	}
	if !(rep.Seconds >= 0.02) || rep.Throughput <= 0 || rep.P50ms > rep.P99ms || rep.P99ms > rep.Maxms {
		t.Fatalf("report %+v", rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := loadPhase(ctx, 2, time.Hour, op); rep.Requests != 0 {
		t.Fatalf("cancelled phase sent %d requests", rep.Requests)
	}
}

// TestParsePhases checks --phases: every known phase, in any order and
// with spaces, and an error for anything else (nothing is run then).
func TestParsePhases(t *testing.T) {
	for _, c := range []struct {
		in   string
		want benchPhases
		err  bool
	}{
		{"sticky,fresh,idempotent", benchPhases{sticky: true, fresh: true, idempotent: true}, false},
		{"idempotent", benchPhases{idempotent: true}, false},
		{" fresh , idempotent", benchPhases{fresh: true, idempotent: true}, false},
		{"sticky", benchPhases{sticky: true}, false},
		{"fresh,idem", benchPhases{}, true},
		{"", benchPhases{}, true},
	} {
		got, err := parsePhases(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parsePhases(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestBenchDoIdempotencyKey: benchDo sends the Idempotency-Key header only
// when a key is given, and a non-2xx reply is an error.
func TestBenchDoIdempotencyKey(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, strings.Join(r.Header.Values("Idempotency-Key"), "|"))
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"fresh":true}`))
	}))
	defer srv.Close()
	var out struct{ Fresh bool }
	if err := benchDo(srv.Client(), "POST", srv.URL, "tok", "k-1", nil, &out); err != nil || !out.Fresh {
		t.Fatalf("with a key: %+v, %v", out, err)
	}
	if err := benchDo(srv.Client(), "POST", srv.URL, "tok", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := benchDo(srv.Client(), "POST", srv.URL, "bad", "", nil, nil); err == nil {
		t.Fatal("a 401 reply was not an error")
	}
	if want := []string{"k-1", "", ""}; !slices.Equal(got, want) {
		t.Fatalf("Idempotency-Key headers %q, want %q", got, want)
	}
}
