package serve

// Routing every request: status capture, the mux's own replies replaced by
// problem documents, metrics and internal errors.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// discardWriter captures the status and headers of the mux's own 404/405
// replies, which are replaced by problem documents.
type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(c int) {
	if d.status == 0 {
		d.status = c
	}
}
func (d *discardWriter) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(b), nil
}

// ServeHTTP routes r, writes every error as application/problem+json,
// applies the per-address rate limit to the /v1/ routes, recovers panics
// (500), records metrics and echoes the request ID (X-Request-Id).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	ri := &reqInfo{client: clientAddr(r, s.proxies).String(), id: requestID(r)}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey, ri))
	w.Header().Set("X-Request-Id", ri.id)
	sw := &statusWriter{ResponseWriter: w}
	route := "unmatched"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in handler", "route", route, "request_id", ri.id, "panic", fmt.Sprint(v))
			if sw.status == 0 {
				writeProblem(sw, problem(http.StatusInternalServerError, TypeInternal, "internal error"))
			}
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		d := time.Since(t0)
		s.met.observe(route, status, d)
		if s.cfg.AccessLog || status >= 500 {
			// Never the path (it holds labels), a token or a body.
			s.log.Info("request", "method", r.Method, "route", route, "status", status, "ms", float64(d.Microseconds())/1000,
				"client", ri.client, "request_id", ri.id)
		}
	}()
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		if ok, wait := s.addrLim.take(ri.client, s.now()); !ok {
			s.met.rateLimited.WithLabelValues("address").Inc()
			writeProblem(sw, tooMany("too many requests from this address", wait))
			return
		}
	}
	_, pat := s.mux.Handler(r)
	switch {
	case pat != "" && r.Method != http.MethodConnect && !canonical(r.URL.EscapedPath()):
		// ServeMux would redirect to the cleaned path (307, HTML body).
		writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route: the path has empty, '.' or '..' segments"))
		return
	case pat != "" && !strings.HasPrefix(pat, r.Method+" "):
		// A GET route matched HEAD. Not served: on the recommendation
		// routes it would release (and charge) a list nobody sees.
		allow := s.allowed(r)
		sw.Header().Set("Allow", allow)
		writeProblem(sw, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, allow)))
		return
	case pat == "":
		// Let the mux decide between 404 and 405 (and redirects), then
		// answer with a problem document.
		d := &discardWriter{h: http.Header{}}
		s.mux.ServeHTTP(d, r)
		switch d.status {
		case http.StatusMethodNotAllowed:
			allow := s.allowed(r)
			sw.Header().Set("Allow", allow)
			writeProblem(sw, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, fmt.Sprintf("method %s is not allowed here (allowed: %s)", r.Method, allow)))
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route (did you mean "+d.h.Get("Location")+"?)"))
		default:
			writeProblem(sw, problem(http.StatusNotFound, TypeNotFound, "no such route: "+r.URL.Path))
		}
		return
	}
	route = pat
	s.mux.ServeHTTP(sw, r)
}

// MetricsHandler serves the Prometheus metrics (GET /metrics on the
// service's own listener unless Config.SeparateMetrics; `dplp serve
// --metrics-listen` serves it on another). Only GET and only /metrics.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			writeProblem(w, problem(http.StatusNotFound, TypeNotFound, "no such route (metrics are at /metrics)"))
		case r.Method != http.MethodGet:
			w.Header().Set("Allow", http.MethodGet)
			writeProblem(w, problem(http.StatusMethodNotAllowed, TypeMethodNotAllowed, "method "+r.Method+" is not allowed here (allowed: GET)"))
		default:
			s.met.handler.ServeHTTP(w, r)
		}
	})
}

// internal logs err and returns a generic 500 problem (details stay in the
// log).
func (s *Server) internal(r *http.Request, what string, err error) *Problem {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "request cancelled")
	}
	s.log.Error(what+" failed", "method", r.Method, "request_id", infoOf(r).id, "err", err)
	return problem(http.StatusInternalServerError, TypeInternal, what+" failed (see the server log)")
}

// rhoCap maps Config.UserRhoCap (or UserPartyBudget) to a ledger cap (0:
// none).
func rhoCap(r float64) float64 {
	if r == 0 {
		return math.Inf(1)
	}
	return r
}
