package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/release"
)

type handlerFunc func(w http.ResponseWriter, r *http.Request) *Problem

func (s *Server) handle(pattern string, h handlerFunc) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if p := h(w, r); p != nil {
			writeProblem(w, p)
		}
	})
}

func (s *Server) routesInit() {
	s.mux = http.NewServeMux()
	s.handle("POST /v1/admin/users", s.createUser)
	s.handle("DELETE /v1/admin/users/{label}/token", s.revokeToken)
	s.handle("POST /v1/admin/reload", s.adminReload)
	s.handle("GET /v1/admin/state", s.adminState)
	s.handle("GET /v1/users/{label}/recommendations", s.getRecs)
	s.handle("POST /v1/users/{label}/recommendations", s.postRecs)
	s.handle("GET /v1/users/{label}/budget", s.getBudget)
	s.handle("GET /v1/users/{label}/protected", s.getMarks)
	s.handle("PUT /v1/users/{label}/protected", s.putMarks)
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	if !s.cfg.SeparateMetrics {
		s.handle("GET /metrics", func(w http.ResponseWriter, r *http.Request) *Problem {
			s.met.handler.ServeHTTP(w, r)
			return nil
		})
	}
	s.handle("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) *Problem {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
		w.Write(openAPIDoc)
		return nil
	})
}

// Routes lists the registered route patterns ("METHOD /path").
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

func invalidf(format string, args ...any) *Problem {
	return problem(http.StatusBadRequest, TypeInvalidRequest, fmt.Sprintf(format, args...))
}

// decodeBody decodes exactly one JSON value into v from a size-limited
// body, rejecting unknown fields and trailing data.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *Problem {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		var extra json.RawMessage
		if e := dec.Decode(&extra); e != io.EOF {
			if e == nil {
				return invalidf("invalid JSON body: more than one JSON value")
			}
			err = e
		}
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mbe):
		return problem(http.StatusRequestEntityTooLarge, TypeTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
	case err == io.EOF:
		return invalidf("empty body: a JSON object is expected")
	}
	return invalidf("invalid JSON body: %v", err)
}

// noBody accepts an empty body or an empty JSON object.
func (s *Server) noBody(w http.ResponseWriter, r *http.Request) *Problem {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return problem(http.StatusRequestEntityTooLarge, TypeTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
	}
	if err != nil {
		return invalidf("reading the body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var empty struct{}
	if err := dec.Decode(&empty); err != nil {
		return invalidf("this request takes no body (or {}): %v", err)
	}
	if dec.More() {
		return invalidf("this request takes no body (or {})")
	}
	if strings.TrimSpace(string(b)) == "null" {
		return invalidf("this request takes no body (or {}), not null")
	}
	return nil
}

// query parses the query string, allowing only the named parameters, each
// at most once.
func query(r *http.Request, allowed ...string) (url.Values, *Problem) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidf("malformed query string: %v", err)
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			if len(allowed) == 0 {
				return nil, invalidf("unknown query parameter %q (this route takes none)", name)
			}
			return nil, invalidf("unknown query parameter %q (allowed: %s)", name, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, invalidf("query parameter %q given %d times", name, len(vs))
		}
	}
	return q, nil
}

func (s *Server) parseK(r *http.Request) (int, *Problem) {
	q, p := query(r, "k")
	if p != nil {
		return 0, p
	}
	v, ok := q["k"]
	if !ok {
		return 0, invalidf("query parameter k (list length, 1 <= k <= %d) is required", s.cfg.KMax)
	}
	k, err := strconv.Atoi(v[0])
	switch {
	case err != nil:
		return 0, invalidf("k must be an integer in [1, %d], got %q", s.cfg.KMax, v[0])
	case k < 1:
		return 0, invalidf("k must be >= 1, got %d", k)
	case k > s.cfg.KMax:
		return 0, invalidf("k must be <= %d (the server's k-max), got %d", s.cfg.KMax, k)
	}
	return k, nil
}

// ---- admin ----

type createUserRequest struct {
	User *string `json:"user"`
}

type createUserResponse struct {
	User  string `json:"user"`
	Token string `json:"token"`
	Note  string `json:"note"`
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) *Problem {
	if p := s.authAdmin(r); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	var req createUserRequest
	if p := s.decodeBody(w, r, &req); p != nil {
		return p
	}
	if req.User == nil || *req.User == "" {
		return invalidf(`"user" (a node label of the served graph) is required`)
	}
	u := *req.User
	if len(u) > MaxLabelBytes {
		return invalidf(`"user" is over %d bytes: the service does not issue tokens for such labels`, MaxLabelBytes)
	}
	if u == "." || u == ".." {
		// Such a label can never reach the user routes: clients, proxies
		// and the server itself normalise "." and ".." path segments.
		return invalidf(`"user" %q cannot be served: "." and ".." are removed from URL paths; give the node another label`, u)
	}
	if _, ok := s.state.Load().g.ID(u); !ok {
		return problem(http.StatusNotFound, TypeNotFound, fmt.Sprintf("user %q is not a node of the served graph", u))
	}
	tok, hash, err := newToken(u)
	if err != nil {
		return s.internal(r, "token generation", err)
	}
	if err := s.store.PutToken(r.Context(), u, hash); err != nil {
		return s.internal(r, "storing the token", err)
	}
	s.log.Info("token issued", "request_id", infoOf(r).id)
	writeJSON(w, http.StatusCreated, createUserResponse{User: u, Token: tok,
		Note: "shown once: only its SHA-256 hash is stored; issuing again replaces it"})
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) *Problem {
	if p := s.authAdmin(r); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	u := r.PathValue("label")
	if _, ok := s.state.Load().g.ID(u); !ok {
		// Not through the cache: it holds nodes only.
		_, found, err := s.cache.Store.TokenHash(r.Context(), u)
		if err != nil {
			return s.internal(r, "token lookup", err)
		}
		if !found {
			return problem(http.StatusNotFound, TypeNotFound, fmt.Sprintf("user %q is not a node of the served graph and has no token", u))
		}
	}
	if err := s.store.RevokeToken(r.Context(), u); err != nil {
		return s.internal(r, "revoking the token", err)
	}
	s.log.Info("token revoked", "request_id", infoOf(r).id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stateInfo describes the served state. Its counts (protected pairs, users
// with marks) change with every marks update, so it is shown to the admin
// only (GET /v1/admin/state, POST /v1/admin/reload), never on the
// unauthenticated probes.
type stateInfo struct {
	Nodes          int       `json:"nodes"`
	Edges          int64     `json:"edges"`
	ProtectedPairs int64     `json:"protected_pairs"`
	FilePairs      int       `json:"file_pairs"`
	UsersWithMarks int       `json:"users_with_marks"`
	Model          string    `json:"model"`
	Score          string    `json:"score"`
	EpsP           float64   `json:"eps_p"`
	Loaded         time.Time `json:"loaded"`
	SkippedMarks   int       `json:"skipped_marks"`
}

func info(st *state) stateInfo {
	return stateInfo{Nodes: st.g.N(), Edges: st.g.M(), ProtectedPairs: st.prot.Len(), FilePairs: len(st.fileMarks),
		UsersWithMarks: len(st.userMarks), Model: st.modelID, Score: st.m.Score, EpsP: st.m.EpsP, Loaded: st.loaded,
		SkippedMarks: len(st.skipped)}
}

// adminState shows the served state (admin only).
func (s *Server) adminState(w http.ResponseWriter, r *http.Request) *Problem {
	if p := s.authAdmin(r); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	st := s.state.Load()
	if st == nil {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "not loaded")
	}
	writeJSON(w, http.StatusOK, info(st))
	return nil
}

func (s *Server) adminReload(w http.ResponseWriter, r *http.Request) *Problem {
	if p := s.authAdmin(r); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	if p := s.noBody(w, r); p != nil {
		return p
	}
	if err := s.reloadAll(context.WithoutCancel(r.Context()), "reload"); err != nil {
		s.log.Error("reload failed; still serving the previous state", "err", err)
		return problem(http.StatusUnprocessableEntity, TypeReloadFailed, err.Error()+" (the previous state is still served)")
	}
	writeJSON(w, http.StatusOK, info(s.state.Load()))
	return nil
}

// ---- users ----

type recsResponse struct {
	User            string   `json:"user"`
	Recommendations []string `json:"recommendations"`
	K               int      `json:"k"`
	EpsP            float64  `json:"eps_p"`
	Cost            float64  `json:"cost"`      // charged by this request
	Spent           float64  `json:"spent"`     // user's total after it
	Remaining       *float64 `json:"remaining"` // null: no cap
	Fresh           bool     `json:"fresh"`
	Guarantee       string   `json:"guarantee"`
	ListEps         float64  `json:"list_eps"` // the list's own protected-pair DP epsilon
	ReleaseID       int64    `json:"release_id"`
	Model           string   `json:"model"`
	Notice          string   `json:"notice,omitempty"`
}

func (s *Server) remaining(spent float64) *float64 {
	if math.IsInf(s.cap.Eps, 1) {
		return nil
	}
	r := max(0, s.cap.Eps-spent)
	return &r
}

func (s *Server) getRecs(w http.ResponseWriter, r *http.Request) *Problem  { return s.recs(w, r, false) }
func (s *Server) postRecs(w http.ResponseWriter, r *http.Request) *Problem { return s.recs(w, r, true) }

// validIdemKey accepts 1-255 visible ASCII characters.
func validIdemKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *Server) recs(w http.ResponseWriter, r *http.Request, fresh bool) *Problem {
	label := r.PathValue("label")
	if p := s.authUser(r, label); p != nil {
		return p
	}
	k, p := s.parseK(r)
	if p != nil {
		return p
	}
	st := s.state.Load()
	if _, ok := st.g.ID(label); !ok {
		return problem(http.StatusNotFound, TypeNotFound, fmt.Sprintf("user %q is not a node of the served graph", label))
	}
	rec, idemKey := st.rec, ""
	if fresh {
		if p := s.noBody(w, r); p != nil {
			return p
		}
		if vs, ok := r.Header["Idempotency-Key"]; ok {
			if len(vs) != 1 || !validIdemKey(vs[0]) {
				return invalidf("Idempotency-Key must be given once, as 1 to 255 visible ASCII characters")
			}
			idemKey = vs[0]
		}
	}
	ctx := r.Context()
	if p, err := s.precheck(ctx, rec, label, k, fresh, idemKey); err != nil {
		return s.internal(r, "budget pre-check", err)
	} else if p != nil {
		return p
	}
	s.met.releaseCalls.Inc()
	res, err := rec.Recommend(ctx, []string{label}, k, callOptions(fresh, idemKey)...)
	var refused *release.RefusedError
	switch {
	case errors.As(err, &refused):
		s.met.refusals.Inc()
		pr := problem(BudgetExhaustedStatus, TypeBudgetExhausted, "")
		var be *ledger.BudgetError
		switch {
		case len(res) == 1 && errors.As(res[0].Err, &be) && be.PartyRefused():
			// Refused by the party-unit cap: the figures are party-unit
			// ones, written only when finite (JSON has no infinity).
			pr.Detail = fmt.Sprintf("a fresh list would cost eps %g under the party unit; user %q has spent %g of a party-unit cap of %g (budgets never replenish)", be.PartyCost, label, be.PartySpent, be.Cap.PartyEps)
			if math.IsInf(be.PartyCost, 1) {
				pr.Detail = fmt.Sprintf("a fresh list's party-unit cost is unbounded; the party-unit cap of user %q is %g", label, be.Cap.PartyEps)
			} else if math.IsInf(be.PartySpent, 1) {
				pr.Detail = fmt.Sprintf("user %q's party-unit spending is unbounded (a list without a party-unit cost); the party-unit cap is %g", label, be.Cap.PartyEps)
			}
			if !math.IsInf(be.PartySpent, 1) && !math.IsInf(be.PartyCost, 1) {
				pr.Spent, pr.Cost, pr.Cap = &be.PartySpent, &be.PartyCost, &be.Cap.PartyEps
			}
		case len(res) == 1 && errors.As(res[0].Err, &be):
			pr.Detail = fmt.Sprintf("a fresh list would cost eps %g; user %q has spent %g of a cap of %g (budgets never replenish)", be.Cost, label, be.Spent, be.Cap.Eps)
			pr.Spent, pr.Cost, pr.Cap = &be.Spent, &be.Cost, &be.Cap.Eps
		default:
			pr.Detail = fmt.Sprintf("user %q cannot pay for a fresh list", label)
		}
		return pr
	case errors.Is(err, ledger.ErrIdemConflict):
		return problem(http.StatusConflict, TypeIdemConflict, "this Idempotency-Key was already used by this user for a request with another k or model")
	case err != nil:
		return s.internal(r, "release", err)
	}
	out := res[0]
	if out.Seeded || rec.Seeded() {
		// Unreachable: the service's Recommenders are crypto-seeded and
		// re-serve crypto releases only (provenance-aware lookups and
		// keys). A seeded list never leaves the service.
		return s.internal(r, "release", fmt.Errorf("refusing to serve seeded release %d of user %q", out.ReleaseID, label))
	}
	if out.Fresh {
		s.met.releases.WithLabelValues("fresh").Inc()
		s.met.epsCharged.Add(out.Cost)
	} else {
		s.met.releases.WithLabelValues("reserved").Inc()
	}
	sp, err := s.cache.cachedBudget(ctx, label)
	if err != nil {
		// The list is released and charged: still return it.
		s.log.Error("budget lookup after a release failed", "request_id", infoOf(r).id, "err", err)
		sp.Spent = math.NaN()
	}
	list := out.List
	if list == nil {
		list = []string{}
	}
	resp := recsResponse{User: label, Recommendations: list, K: k, EpsP: rec.EpsP(), Cost: out.Cost, Fresh: out.Fresh,
		Guarantee: out.Guarantee.Text, ListEps: out.Guarantee.Eps, ReleaseID: out.ReleaseID, Model: rec.ModelID(), Notice: out.Notice}
	if !math.IsNaN(sp.Spent) {
		resp.Spent = sp.Spent
		resp.Remaining = s.remaining(sp.Spent)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

type budgetResponse struct {
	User      string   `json:"user"`
	Spent     float64  `json:"spent"`
	Remaining *float64 `json:"remaining"` // null: no cap
	Cap       *float64 `json:"cap"`       // null: no cap
	Releases  int      `json:"releases"`
	Rho       float64  `json:"rho"`
	// The party-unit total (null: unbounded, party_unbounded > 0 of the
	// user's lists have no party-unit cost), its cap and what remains
	// (null: no party cap).
	PartySpent     *float64 `json:"party_spent"`
	PartyUnbounded int      `json:"party_unbounded"`
	PartyRemaining *float64 `json:"party_remaining"`
	PartyCap       *float64 `json:"party_cap"`
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) *Problem {
	label := r.PathValue("label")
	if p := s.authUser(r, label); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	sp, err := s.store.Budget(r.Context(), label)
	if err != nil {
		return s.internal(r, "budget lookup", err)
	}
	resp := budgetResponse{User: label, Spent: sp.Spent, Remaining: s.remaining(sp.Spent), Releases: sp.Releases, Rho: sp.Rho,
		PartyUnbounded: sp.PartyUnbounded}
	if !math.IsInf(s.cap.Eps, 1) {
		c := s.cap.Eps
		resp.Cap = &c
	}
	if pt := sp.PartyTotal(); !math.IsInf(pt, 1) {
		resp.PartySpent = &pt
	}
	if c := s.cap.PartyEps; !math.IsInf(c, 1) {
		r := max(0, c-sp.PartyTotal()) // 0 when unbounded
		resp.PartyCap, resp.PartyRemaining = &c, &r
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

type marksBody struct {
	Protected *[]string `json:"protected"`
}

type marksResponse struct {
	User      string   `json:"user"`
	Protected []string `json:"protected"`
	Note      string   `json:"note"`
}

const marksNote = "your marks protect the pairs {you, x} in lists released after they were set; lists already released are not retroactively protected"

func (s *Server) getMarks(w http.ResponseWriter, r *http.Request) *Problem {
	label := r.PathValue("label")
	if p := s.authUser(r, label); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	m, err := s.cache.Store.(ledger.UserMarker).UserMarks(r.Context(), label)
	if err != nil {
		return s.internal(r, "marks lookup", err)
	}
	if m == nil {
		m = []string{}
	}
	writeJSON(w, http.StatusOK, marksResponse{User: label, Protected: m, Note: marksNote})
	return nil
}

func (s *Server) putMarks(w http.ResponseWriter, r *http.Request) *Problem {
	label := r.PathValue("label")
	if p := s.authUser(r, label); p != nil {
		return p
	}
	if _, p := query(r); p != nil {
		return p
	}
	var body marksBody
	if p := s.decodeBody(w, r, &body); p != nil {
		return p
	}
	if body.Protected == nil {
		return invalidf(`"protected" (a list of node labels; [] clears) is required`)
	}
	marks := *body.Protected
	if len(marks) > s.cfg.MaxMarks {
		return invalidf("at most %d protected labels per user, got %d", s.cfg.MaxMarks, len(marks))
	}
	st := s.state.Load()
	if _, ok := st.g.ID(label); !ok {
		return problem(http.StatusNotFound, TypeNotFound, fmt.Sprintf("user %q is not a node of the served graph", label))
	}
	// Linear: one map lookup per label; the echo of unknown labels is
	// capped (maxUnknownEcho labels, each cut to maxEchoBytes).
	var unknown []string
	nUnknown := 0
	seenUnknown := map[string]bool{}
	set := make(map[string]bool, len(marks))
	for _, x := range marks {
		if x == label {
			return invalidf("a user cannot protect a pair with itself (%q)", x)
		}
		if _, ok := st.g.ID(x); !ok {
			if !seenUnknown[x] {
				seenUnknown[x] = true
				nUnknown++
				if len(unknown) < maxUnknownEcho {
					unknown = append(unknown, truncLabel(x))
				}
			}
			continue
		}
		set[x] = true
	}
	if nUnknown > 0 {
		show := unknown[:min(len(unknown), 20)]
		quoted := make([]string, len(show))
		for i, u := range show {
			quoted[i] = strconv.Quote(u)
		}
		more := ""
		if nUnknown > len(show) {
			more = fmt.Sprintf(" and %d more", nUnknown-len(show))
		}
		p := invalidf("%d unknown label(s), not nodes of the served graph: %s%s", nUnknown, strings.Join(quoted, ", "), more)
		p.Unknown = unknown
		return p
	}
	clean := make([]string, 0, len(set))
	for x := range set {
		clean = append(clean, x)
	}
	slices.Sort(clean)
	ctx := context.WithoutCancel(r.Context())
	if err := s.store.SetMarks(ctx, label, clean); err != nil {
		return s.internal(r, "storing the marks", err)
	}
	if err := s.applyMarks(ctx); err != nil {
		return s.internal(r, "applying the marks (they are stored and will apply at the next reload or refresh)", err)
	}
	s.log.Info("marks set", "request_id", infoOf(r).id, "count", len(clean))
	writeJSON(w, http.StatusOK, marksResponse{User: label, Protected: clean, Note: marksNote})
	return nil
}

// ---- probes ----

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) *Problem {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) *Problem {
	if s.draining.Load() {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "shutting down")
	}
	st := s.state.Load()
	if st == nil {
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "not loaded")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.SchemaVersion(ctx); err != nil {
		s.log.Error("readiness: store unreachable", "err", err)
		return problem(http.StatusServiceUnavailable, TypeUnavailable, "ledger store unreachable")
	}
	// A bare status: the state's counts (protected pairs, users with
	// marks) change with every marks update and are admin-only
	// (GET /v1/admin/state).
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// The echo of unknown labels in a marks problem: at most maxUnknownEcho
// labels (the "unknown" member), each cut to maxEchoBytes.
const (
	maxUnknownEcho = 100
	maxEchoBytes   = 256
)

// truncLabel cuts l to maxEchoBytes (at a UTF-8 boundary), marking the cut.
func truncLabel(l string) string {
	if len(l) <= maxEchoBytes {
		return l
	}
	n := maxEchoBytes
	for n > 0 && !utf8.RuneStart(l[n]) {
		n--
	}
	return l[:n] + "..."
}

// precheck refuses, before any sampling or ledger transaction, a request
// that would release a fresh list the user cannot pay for: a POST, or a
// GET with no list to re-serve, when the user's spend (cached: it only
// grows, so a stale value never refuses wrongly) plus the charge of K
// random picks (the most a list of K costs) exceeds the cap. The decision
// depends on the spend, K, eps_p and the cap only, never on the sampled
// list or the private graph; the charging transaction stays the authority.
// A POST with an Idempotency-Key is not pre-checked: a retry of a request
// already charged must get its list, and the store alone knows the keys.
func (s *Server) precheck(ctx context.Context, rec *release.Recommender, label string, k int, fresh bool, idemKey string) (*Problem, error) {
	if fresh && idemKey != "" {
		// A retry of a request already charged must get its list: only a
		// key the store does not know yet is checked against the cap.
		if s.idem == nil {
			return nil, nil
		}
		if _, found, err := s.idem.FindIdem(ctx, label, "client:"+idemKey, rec.Provenance()); err != nil || found {
			return nil, err
		}
	}
	if !fresh {
		if _, found, err := s.cache.Latest(ctx, label, rec.ModelID(), k, rec.Provenance()); err != nil || found {
			return nil, err
		}
	}
	c := accountant.PerPick(rec.EpsP(), k)
	if rec.ListLevel() {
		c = accountant.PureList(rec.EpsList()) // one charge per list, whatever K
	}
	sp, err := s.cache.cachedBudget(ctx, label)
	if err != nil {
		return nil, err
	}
	// A list's party-unit cost is at least its own cost (eps x
	// L1_party/L1_pair >= eps for a pair-unit list): c.Eps is a lower
	// bound on it, exact for per-pick and party-unit lists.
	if sp.Spent+c.Eps <= s.cap.Eps && sp.Rho+c.Rho <= s.cap.Rho && sp.PartyTotal()+c.Eps <= s.cap.PartyEps {
		return nil, nil
	}
	s.met.refusals.Inc()
	s.met.earlyRefusals.Inc()
	if sp.Spent+c.Eps <= s.cap.Eps && sp.Rho+c.Rho <= s.cap.Rho { // the party-unit cap refuses
		pt := sp.PartyTotal()
		if math.IsInf(pt, 1) {
			return problem(BudgetExhaustedStatus, TypeBudgetExhausted, fmt.Sprintf("user %q's party-unit spending is unbounded (a list without a party-unit cost); the party-unit cap is %g", label, s.cap.PartyEps)), nil
		}
		pr := problem(BudgetExhaustedStatus, TypeBudgetExhausted, fmt.Sprintf("a fresh list of %d costs at least eps %g under the party unit; user %q has spent %g of a party-unit cap of %g (budgets never replenish)", k, c.Eps, label, pt, s.cap.PartyEps))
		cost, cp := c.Eps, s.cap.PartyEps
		pr.Spent, pr.Cost, pr.Cap = &pt, &cost, &cp
		return pr, nil
	}
	pr := problem(BudgetExhaustedStatus, TypeBudgetExhausted, fmt.Sprintf("a fresh list of %d costs up to eps %g; user %q has spent %g of a cap of %g (budgets never replenish)", k, c.Eps, label, sp.Spent, s.cap.Eps))
	spent, cost, cp := sp.Spent, c.Eps, s.cap.Eps
	pr.Spent, pr.Cost, pr.Cap = &spent, &cost, &cp
	return pr, nil
}
