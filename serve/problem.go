package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Problem types (RFC 9457 "type" members). They are relative URI references
// and stable: clients may switch on them. The OpenAPI document lists them.
const (
	TypeUnauthorized     = "unauthorized"         // 401: missing, malformed, unknown or revoked token
	TypeForbidden        = "forbidden"            // 403: valid token, not allowed (another user's data, admin vs user)
	TypeNotFound         = "not-found"            // 404: unknown route or unknown user label
	TypeMethodNotAllowed = "method-not-allowed"   // 405
	TypeInvalidRequest   = "invalid-request"      // 400: bad parameter or body
	TypeTooLarge         = "payload-too-large"    // 413: body over the limit
	TypeBudgetExhausted  = "budget-exhausted"     // 403: the user's privacy budget cannot pay for a fresh list
	TypeIdemConflict     = "idempotency-conflict" // 409: Idempotency-Key reused for another request
	TypeReloadFailed     = "reload-failed"        // 422: the configured files could not be loaded (old state kept)
	TypeRateLimited      = "rate-limited"         // 429: too many requests (Retry-After says when to retry)
	TypeUnavailable      = "unavailable"          // 503: not ready or shutting down
	TypeInternal         = "internal-error"       // 500
	// net/http's own replies to requests it cannot parse (rawreply.go):
	// 400 ones are invalid-request; these two have their own statuses.
	TypeHeaderTooLarge = "header-too-large" // 431: request header over the limit
	TypeNotImplemented = "not-implemented"  // 501: unsupported transfer encoding
)

// BudgetExhaustedStatus is the HTTP status of a budget refusal: 403, not
// 429, because a spent budget never replenishes and retrying cannot help.
const BudgetExhaustedStatus = http.StatusForbidden

var problemTitles = map[string]string{
	TypeUnauthorized:     "Unauthorized",
	TypeForbidden:        "Forbidden",
	TypeNotFound:         "Not found",
	TypeMethodNotAllowed: "Method not allowed",
	TypeInvalidRequest:   "Invalid request",
	TypeTooLarge:         "Request body too large",
	TypeBudgetExhausted:  "Privacy budget exhausted",
	TypeIdemConflict:     "Idempotency key conflict",
	TypeReloadFailed:     "Reload failed",
	TypeRateLimited:      "Too many requests",
	TypeUnavailable:      "Service unavailable",
	TypeInternal:         "Internal server error",
	TypeHeaderTooLarge:   "Request header fields too large",
	TypeNotImplemented:   "Not implemented",
}

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Extension members.
	Unknown []string `json:"unknown,omitempty"` // invalid-request: unknown labels
	Spent   *float64 `json:"spent,omitempty"`   // budget-exhausted
	Cost    *float64 `json:"cost,omitempty"`    // budget-exhausted: the cost asked for
	Cap     *float64 `json:"cap,omitempty"`     // budget-exhausted
	// retryAfter is the Retry-After header of a 429, in seconds.
	retryAfter int
}

func (p *Problem) Error() string { return p.Type + ": " + p.Detail }

func problem(status int, typ, detail string) *Problem {
	return &Problem{Type: typ, Title: problemTitles[typ], Status: status, Detail: detail}
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *Problem) {
	b, err := json.Marshal(p)
	if err != nil { // cannot happen: only strings and finite floats
		b = []byte(`{"type":"internal-error","title":"Internal server error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="dplp"`)
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	w.WriteHeader(p.Status)
	w.Write(append(b, '\n'))
}

// writeJSON writes v as application/json with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeProblem(w, problem(http.StatusInternalServerError, TypeInternal, "encoding the response failed"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
