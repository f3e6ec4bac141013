package serve

// The OpenAPI document checked with an OpenAPI 3.1 validator
// (github.com/getkin/kin-openapi, a test-only dependency): the document
// itself, and every response of the real handler (status, content type,
// headers, body schema) on every route's success and error paths, so that
// the document cannot drift from the handlers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// responseKey is what OpenAPI 3.1 allows as a key of a Responses Object
// (an HTTP status code, a range such as 4XX, or default): kin-openapi's
// Validate does not check the keys.
var responseKey = regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5]XX|default)$`)

// loadOpenAPIDoc loads b and validates it as an OpenAPI 3.1 document.
func loadOpenAPIDoc(b []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b) // external $refs are refused
	if err != nil {
		return nil, err
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		return nil, fmt.Errorf("openapi %q: want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	for p, item := range doc.Paths.Map() {
		for m, op := range item.Operations() {
			if op.Responses == nil || op.Responses.Len() == 0 {
				return nil, fmt.Errorf("%s %s documents no response", m, p)
			}
			for code := range op.Responses.Map() {
				if !responseKey.MatchString(code) {
					return nil, fmt.Errorf("%s %s: response key %q is not a status code, a range or default", m, p, code)
				}
			}
		}
	}
	return doc, nil
}

// TestOpenAPIDocumentValid: the embedded document is a valid OpenAPI 3.1
// document, and the validator is not vacuous: broken copies are refused.
func TestOpenAPIDocumentValid(t *testing.T) {
	if _, err := loadOpenAPIDoc(OpenAPI()); err != nil {
		t.Fatalf("serve/openapi.json is not a valid OpenAPI 3.1 document: %v", err)
	}
	// Negative controls: each edit of a decoded copy must be refused.
	for name, edit := range map[string]func(d map[string]any){
		"unknown schema type": func(d map[string]any) {
			at(d, "components", "schemas", "Budget", "properties", "releases")["type"] = "integr"
		},
		"unknown type in a 3.1 type array": func(d map[string]any) {
			at(d, "components", "schemas", "Budget", "properties", "remaining")["type"] = []any{"number", "nul"}
		},
		"response without a description": func(d map[string]any) {
			delete(at(d, "paths", "/v1/admin/users", "post", "responses", "201"), "description")
		},
		"dangling $ref": func(d map[string]any) {
			at(d, "paths", "/v1/users/{label}/budget", "get", "responses", "200", "content", "application/json", "schema")["$ref"] = "#/components/schemas/Nope"
		},
		"response key not a status": func(d map[string]any) {
			rs := at(d, "paths", "/healthz", "get", "responses")
			rs["2000"] = rs["200"]
		},
		"boolean exclusiveMinimum (OpenAPI 3.0 form)": func(d map[string]any) {
			at(d, "components", "schemas", "Problem", "properties", "status")["exclusiveMinimum"] = true
		},
		"optional path parameter": func(d map[string]any) {
			ps := at(d, "paths", "/v1/users/{label}/budget", "get")["parameters"].([]any)
			ps[0].(map[string]any)["required"] = false
		},
		"unknown operation field": func(d map[string]any) {
			at(d, "paths", "/readyz", "get")["bogus"] = 1
		},
		"OpenAPI 3.0 version": func(d map[string]any) { d["openapi"] = "3.0.3" },
	} {
		var d map[string]any
		if err := json.Unmarshal(OpenAPI(), &d); err != nil {
			t.Fatal(err)
		}
		edit(d)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := loadOpenAPIDoc(b); err == nil {
			t.Errorf("%s: the broken document was accepted", name)
		}
	}
}

// at walks a decoded JSON document (test helper: panics on a wrong path).
func at(d map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		d = d[k].(map[string]any)
	}
	return d
}

// apiChecker validates exchanges with the Server against the document and
// records which documented operations and statuses were exercised.
type apiChecker struct {
	t       testing.TB
	doc     *openapi3.T
	covered map[string]map[int]int // "GET /path" -> status -> responses validated
}

func newAPIChecker(t testing.TB) *apiChecker {
	doc, err := loadOpenAPIDoc(OpenAPI())
	if err != nil {
		t.Fatalf("serve/openapi.json: %v", err)
	}
	return &apiChecker{t: t, doc: doc, covered: map[string]map[int]int{}}
}

// exchange is one request to the Server and its response.
type exchange struct {
	req     *http.Request // as sent, body consumed (reqBody holds it)
	reqBody []byte
	status  int
	header  http.Header
	body    []byte
}

// req describes a request: remote "" keeps httptest's peer address.
type req struct {
	remote, method, target, token, body string
	hdr                                 []string
}

func (r req) build() *http.Request {
	var rd io.Reader
	if r.body != "" {
		rd = strings.NewReader(r.body)
	}
	q := httptest.NewRequest(r.method, r.target, rd)
	if r.remote != "" {
		q.RemoteAddr = r.remote
	}
	if r.token != "" {
		q.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.body != "" {
		q.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(r.hdr); i += 2 {
		q.Header.Set(r.hdr[i], r.hdr[i+1])
	}
	return q
}

// run sends r to s, fails unless the status is want (and, for an error, the
// problem type is typ), and validates the exchange against the document.
func (c *apiChecker) run(s *testServer, want int, typ string, r req) exchange {
	c.t.Helper()
	q := r.build()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, q)
	ex := exchange{req: q, reqBody: []byte(r.body), status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	what := r.method + " " + r.target
	if ex.status != want {
		c.t.Errorf("%s: status %d, want %d: %s", what, ex.status, want, ex.body)
		return ex
	}
	if typ != "" {
		var p Problem
		if err := json.Unmarshal(ex.body, &p); err != nil || p.Type != typ {
			c.t.Errorf("%s: problem type %q, want %q: %s", what, p.Type, typ, ex.body)
		}
	}
	if err := c.validate(s.Server, ex, true); err != nil {
		c.t.Errorf("%s -> %d: the response does not match serve/openapi.json: %v\nheaders %v\nbody %s", what, ex.status, err, ex.header, ex.body)
	}
	return ex
}

// route returns the documented operation that served q (path parameters
// included), or a synthetic operation holding the document's generic 404,
// 405 and 429 responses for a request no route matched (documented false).
func (c *apiChecker) route(s *Server, q *http.Request) (rt *routers.Route, params map[string]string, documented bool, err error) {
	_, pat := s.mux.Handler(q) // for a path the mux would redirect (answered 404): the pattern of the cleaned path
	method, path, ok := strings.Cut(pat, " ")
	if !ok {
		op := openapi3.NewOperation()
		op.Responses = openapi3.NewResponsesWithCapacity(3)
		for code, name := range map[string]string{"404": "NotFound", "405": "MethodNotAllowed", "429": "TooManyRequests"} {
			ref := c.doc.Components.Responses[name]
			if ref == nil {
				return nil, nil, false, fmt.Errorf("components.responses.%s is missing", name)
			}
			op.Responses.Set(code, ref)
		}
		m := q.Method
		if m == http.MethodHead {
			m = http.MethodGet // kin-openapi does not validate HEAD responses
		}
		return &routers.Route{Spec: c.doc, Path: q.URL.Path, PathItem: &openapi3.PathItem{}, Method: m, Operation: op}, nil, false, nil
	}
	item := c.doc.Paths.Value(path)
	if item == nil || item.GetOperation(method) == nil {
		return nil, nil, false, fmt.Errorf("route %s is not documented", pat)
	}
	// Path parameters: the pattern's {name} segments, unescaped.
	params = map[string]string{}
	ps, qs := strings.Split(path, "/"), strings.Split(pathpkg.Clean(q.URL.EscapedPath()), "/")
	if len(ps) != len(qs) {
		return nil, nil, false, fmt.Errorf("path %s does not match %s", q.URL.EscapedPath(), path)
	}
	for i, seg := range ps {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			v, err := url.PathUnescape(qs[i])
			if err != nil {
				return nil, nil, false, err
			}
			params[seg[1:len(seg)-1]] = v
		}
	}
	return &routers.Route{Spec: c.doc, Path: path, PathItem: item, Method: method, Operation: item.GetOperation(method)}, params, true, nil
}

// validate checks ex against the document: the status must be documented
// for the operation, and the content type, the headers (required ones
// present) and the body must match its description. It also refuses what
// kin-openapi lets through: a body on a response documented without one,
// object members the schema does not declare, and a problem whose status
// member is not the HTTP status. On success it records the coverage (when
// record is set). For a 2xx, the request is validated too.
func (c *apiChecker) validate(s *Server, ex exchange, record bool) error {
	ctx := context.Background()
	rt, params, documented, err := c.route(s, ex.req)
	if err != nil {
		return err
	}
	vreq := ex.req.Clone(ctx)
	vreq.Method = rt.Method
	vreq.Body = io.NopCloser(bytes.NewReader(ex.reqBody))
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: rt},
		Status:                 ex.status,
		Header:                 ex.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(ex.body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return err
	}
	resp := rt.Operation.Responses.Status(ex.status).Value
	var schema *openapi3.Schema
	if len(resp.Content) == 0 {
		if len(ex.body) > 0 {
			return fmt.Errorf("a body (%d bytes) on a response documented without content", len(ex.body))
		}
	} else if mt := resp.Content.Get(ex.header.Get("Content-Type")); mt != nil && mt.Schema != nil {
		schema = mt.Schema.Value
	}
	if strings.Contains(ex.header.Get("Content-Type"), "json") {
		var v any
		if err := json.Unmarshal(ex.body, &v); err != nil {
			return fmt.Errorf("body: %v", err)
		}
		if schema != nil {
			if err := undeclaredMembers(schema, v, "$"); err != nil {
				return err
			}
		}
		if ex.status >= 400 {
			if m, _ := v.(map[string]any); m == nil || m["status"] != float64(ex.status) {
				return fmt.Errorf("problem status member %v differs from the HTTP status %d", m["status"], ex.status)
			}
		}
	}
	if ex.status/100 == 2 && documented {
		rin := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: rt,
			Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent}}
		vreq.Body = io.NopCloser(bytes.NewReader(ex.reqBody))
		if err := openapi3filter.ValidateRequest(ctx, rin); err != nil {
			return fmt.Errorf("the request that succeeded does not match the document: %w", err)
		}
	}
	if record && documented {
		key := rt.Method + " " + rt.Path
		if c.covered[key] == nil {
			c.covered[key] = map[int]int{}
		}
		c.covered[key][ex.status]++
	}
	return nil
}

// bearerPresent is the request validation's check of a security scheme:
// the document's schemes are all HTTP bearer.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecurityScheme.Type != "http" || in.SecurityScheme.Scheme != "bearer" {
		return fmt.Errorf("security scheme %s: not HTTP bearer", in.SecuritySchemeName)
	}
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

// undeclaredMembers refuses object members that schema does not declare
// (JSON Schema allows them; a response member missing from the document is
// drift all the same).
func undeclaredMembers(schema *openapi3.Schema, v any, at string) error {
	switch v := v.(type) {
	case map[string]any:
		if len(schema.Properties) == 0 {
			return nil // a free-form object (the document at /openapi.json)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := schema.Properties[k]
			if p == nil {
				if schema.AdditionalProperties.Schema != nil || (schema.AdditionalProperties.Has != nil && *schema.AdditionalProperties.Has) {
					continue
				}
				return fmt.Errorf("%s.%s: member not declared by the schema", at, k)
			}
			if err := undeclaredMembers(p.Value, v[k], at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if schema.Items == nil {
			return nil
		}
		for i, x := range v {
			if err := undeclaredMembers(schema.Items.Value, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCoverage fails unless every documented operation was exercised
// (validated) at least once; it logs the documented statuses no test
// exercised.
func (c *apiChecker) checkCoverage() {
	c.t.Helper()
	var ops []string
	for p, item := range c.doc.Paths.Map() {
		for m, op := range item.Operations() {
			key := m + " " + p
			ops = append(ops, key)
			if len(c.covered[key]) == 0 {
				c.t.Errorf("documented operation %s was never exercised", key)
				continue
			}
			var missing []string
			for code := range op.Responses.Map() {
				var st int
				if _, err := fmt.Sscan(code, &st); err == nil && c.covered[key][st] == 0 {
					missing = append(missing, code)
				}
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				c.t.Logf("%s: documented but not exercised: %s", key, strings.Join(missing, " "))
			}
		}
	}
	if len(ops) == 0 {
		c.t.Error("the document has no operations")
	}
}

// copyFixture copies the shared fixture's files into a directory of the
// test (so that it may break them) and returns the config change.
func copyFixture(t *testing.T) (modelPath string, mod func(*Config)) {
	fx := testFixture(t)
	dir := t.TempDir()
	gp, pp, mp := filepath.Join(dir, "g.txt"), filepath.Join(dir, "p.txt"), filepath.Join(dir, "m.json")
	for _, c := range [][2]string{{fx.graph, gp}, {fx.prot, pp}, {fx.model, mp}} {
		b, err := os.ReadFile(c[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return mp, func(c *Config) { c.GraphPath, c.ProtectedPath, c.ModelPath = gp, pp, mp }
}

// TestOpenAPIResponses drives every route of the real handler through its
// success and main error paths and validates every response against the
// document; every documented operation must be exercised.
func TestOpenAPIResponses(t *testing.T) {
	c := newAPIChecker(t)
	const (
		get, post, put, del, head = "GET", "POST", "PUT", "DELETE", "HEAD"
	)
	modelPath, files := copyFixture(t)
	// A cap of 3: two lists of 3 at eps_p 0.5 (remaining is a number).
	// A party-unit cap above the own-unit one: the budget's party members
	// are numbers (the per-pick model's lists cost their eps under it).
	s := newTestServer(t, func(cfg *Config) { files(cfg); cfg.UserBudget = 3; cfg.UserPartyBudget = 100; cfg.MaxBodyBytes = 256 })
	big := `{"user":"` + strings.Repeat("x", 300) + `"}`
	token := func(s *testServer, user string) string {
		ex := c.run(s, 201, "", req{method: post, target: "/v1/admin/users", token: adminTok, body: `{"user":` + jsonString(user) + `}`})
		var out createUserResponse
		if err := json.Unmarshal(ex.body, &out); err != nil || out.Token == "" {
			t.Fatalf("token for %s: %s", user, ex.body)
		}
		return out.Token
	}
	n1, n2, n9 := token(s, "n1"), token(s, "n2"), token(s, "n9")
	token(s, "n3")

	t.Run("admin users", func(t *testing.T) {
		const p = "/v1/admin/users"
		c.run(s, 401, TypeUnauthorized, req{method: post, target: p, body: `{"user":"n4"}`})
		c.run(s, 401, TypeUnauthorized, req{method: post, target: p, token: "x.y", body: `{"user":"n4"}`})
		c.run(s, 403, TypeForbidden, req{method: post, target: p, token: n1, body: `{"user":"n4"}`})
		c.run(s, 404, TypeNotFound, req{method: post, target: p, token: adminTok, body: `{"user":"nobody"}`})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: p, token: adminTok, body: `{}`})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: p, token: adminTok, body: `{"user":"n4","admin":true}`})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: p + "?x=1", token: adminTok, body: `{"user":"n4"}`})
		c.run(s, 413, TypeTooLarge, req{method: post, target: p, token: adminTok, body: big})
		c.run(s, 405, TypeMethodNotAllowed, req{method: get, target: p, token: adminTok})
		c.run(s, 404, TypeNotFound, req{method: post, target: "/v1/admin//users", token: adminTok, body: `{"user":"n4"}`})
	})
	t.Run("revoke", func(t *testing.T) {
		const p = "/v1/admin/users/n3/token"
		c.run(s, 401, TypeUnauthorized, req{method: del, target: p})
		c.run(s, 403, TypeForbidden, req{method: del, target: p, token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: del, target: p + "?x=1", token: adminTok})
		c.run(s, 404, TypeNotFound, req{method: del, target: "/v1/admin/users/nobody/token", token: adminTok})
		c.run(s, 204, "", req{method: del, target: p, token: adminTok})
		c.run(s, 405, TypeMethodNotAllowed, req{method: get, target: p, token: adminTok})
	})
	t.Run("reload", func(t *testing.T) {
		const p = "/v1/admin/reload"
		c.run(s, 200, "", req{method: post, target: p, token: adminTok})
		c.run(s, 200, "", req{method: post, target: p, token: adminTok, body: `{}`})
		c.run(s, 401, TypeUnauthorized, req{method: post, target: p})
		c.run(s, 403, TypeForbidden, req{method: post, target: p, token: n2})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: p, token: adminTok, body: `{"force":true}`})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: p + "?force=1", token: adminTok})
		c.run(s, 413, TypeTooLarge, req{method: post, target: p, token: adminTok, body: big})
		good, err := os.ReadFile(modelPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(modelPath, []byte("{not a model"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.run(s, 422, TypeReloadFailed, req{method: post, target: p, token: adminTok})
		if err := os.WriteFile(modelPath, good, 0o600); err != nil {
			t.Fatal(err)
		}
		c.run(s, 200, "", req{method: post, target: p, token: adminTok})
	})
	t.Run("state", func(t *testing.T) {
		const p = "/v1/admin/state"
		c.run(s, 200, "", req{method: get, target: p, token: adminTok})
		c.run(s, 401, TypeUnauthorized, req{method: get, target: p})
		c.run(s, 403, TypeForbidden, req{method: get, target: p, token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?x=1", token: adminTok})
		c.run(s, 405, TypeMethodNotAllowed, req{method: head, target: p, token: adminTok})
	})
	t.Run("recommendations", func(t *testing.T) {
		const p = "/v1/users/n1/recommendations"
		c.run(s, 200, "", req{method: get, target: p + "?k=3", token: n1})                                         // released and charged
		c.run(s, 200, "", req{method: get, target: p + "?k=3", token: n1, hdr: []string{"X-Request-Id", "abc:1"}}) // re-served
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p, token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?k=0", token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?k=21", token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?k=2&seed=1", token: n1})
		c.run(s, 401, TypeUnauthorized, req{method: get, target: p + "?k=3"})
		c.run(s, 403, TypeForbidden, req{method: get, target: p + "?k=3", token: n2})
		c.run(s, 403, TypeForbidden, req{method: get, target: p + "?k=3", token: adminTok})
		c.run(s, 404, TypeNotFound, req{method: get, target: "/v1/users/n1/../n1/recommendations?k=3", token: n1})
		c.run(s, 405, TypeMethodNotAllowed, req{method: head, target: p + "?k=3", token: n1})
		c.run(s, 405, TypeMethodNotAllowed, req{method: del, target: p + "?k=3", token: n1})

		const q = "/v1/users/n2/recommendations"
		c.run(s, 200, "", req{method: post, target: q + "?k=1", token: n2})
		c.run(s, 200, "", req{method: post, target: q + "?k=1", token: n2, body: "{}", hdr: []string{"Idempotency-Key", "req-1"}})
		c.run(s, 200, "", req{method: post, target: q + "?k=1", token: n2, hdr: []string{"Idempotency-Key", "req-1"}}) // the retry
		c.run(s, 409, TypeIdemConflict, req{method: post, target: q + "?k=2", token: n2, hdr: []string{"Idempotency-Key", "req-1"}})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: q + "?k=1", token: n2, hdr: []string{"Idempotency-Key", "has space"}})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: q + "?k=1", token: n2, body: `{"seed":1}`})
		c.run(s, 400, TypeInvalidRequest, req{method: post, target: q + "?k=-2", token: n2})
		c.run(s, 413, TypeTooLarge, req{method: post, target: q + "?k=1", token: n2, body: big})
		c.run(s, 401, TypeUnauthorized, req{method: post, target: q + "?k=1", token: "nonsense"})
		c.run(s, 403, TypeForbidden, req{method: post, target: q + "?k=1", token: n1})
		c.run(s, 404, TypeNotFound, req{method: post, target: "/v1/users/./n2/recommendations?k=1", token: n2})

		// The budget: two fresh lists of 3 spend the cap of 3; a third and
		// a new sticky list are refused (budget-exhausted, spent/cost/cap).
		const r = "/v1/users/n9/recommendations"
		c.run(s, 200, "", req{method: post, target: r + "?k=3", token: n9})
		c.run(s, 200, "", req{method: post, target: r + "?k=3", token: n9})
		c.run(s, BudgetExhaustedStatus, TypeBudgetExhausted, req{method: post, target: r + "?k=3", token: n9})
		c.run(s, BudgetExhaustedStatus, TypeBudgetExhausted, req{method: get, target: r + "?k=2", token: n9})
		c.run(s, 200, "", req{method: get, target: r + "?k=3", token: n9}) // re-served free
	})
	t.Run("budget", func(t *testing.T) {
		const p = "/v1/users/n1/budget"
		c.run(s, 200, "", req{method: get, target: p, token: n1})
		c.run(s, 200, "", req{method: get, target: "/v1/users/n9/budget", token: n9}) // remaining 0
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?x=1", token: n1})
		c.run(s, 401, TypeUnauthorized, req{method: get, target: p, token: "nonsense"})
		c.run(s, 403, TypeForbidden, req{method: get, target: p, token: n2})
		c.run(s, 404, TypeNotFound, req{method: get, target: "/v1/users/n1/budget/", token: n1})
		c.run(s, 404, TypeNotFound, req{method: get, target: "/v1//users/n1/budget", token: n1})
		c.run(s, 405, TypeMethodNotAllowed, req{method: head, target: p, token: n1})
	})
	t.Run("protected", func(t *testing.T) {
		const p = "/v1/users/n1/protected"
		c.run(s, 200, "", req{method: get, target: p, token: n1}) // none yet: []
		c.run(s, 200, "", req{method: put, target: p, token: n1, body: `{"protected":["n5","n30"]}`})
		c.run(s, 200, "", req{method: get, target: p, token: n1})
		c.run(s, 400, TypeInvalidRequest, req{method: put, target: p, token: n1, body: `{"protected":["n5","ghost","ghost2"]}`})
		c.run(s, 400, TypeInvalidRequest, req{method: put, target: p, token: n1, body: `{"protected":["n1"]}`})
		c.run(s, 400, TypeInvalidRequest, req{method: put, target: p, token: n1, body: `{"marks":["n5"]}`})
		c.run(s, 400, TypeInvalidRequest, req{method: get, target: p + "?x=1", token: n1})
		c.run(s, 413, TypeTooLarge, req{method: put, target: p, token: n1, body: big})
		c.run(s, 401, TypeUnauthorized, req{method: put, target: p, body: `{"protected":[]}`})
		c.run(s, 401, TypeUnauthorized, req{method: get, target: p})
		c.run(s, 403, TypeForbidden, req{method: put, target: p, token: n2, body: `{"protected":[]}`})
		c.run(s, 403, TypeForbidden, req{method: get, target: p, token: n2})
		c.run(s, 405, TypeMethodNotAllowed, req{method: del, target: p, token: n1})
		c.run(s, 200, "", req{method: put, target: p, token: n1, body: `{"protected":[]}`})
	})
	t.Run("probes and documents", func(t *testing.T) {
		c.run(s, 200, "", req{method: get, target: "/healthz"})
		c.run(s, 200, "", req{method: get, target: "/healthz?verbose=1"})
		c.run(s, 405, TypeMethodNotAllowed, req{method: head, target: "/healthz"})
		c.run(s, 405, TypeMethodNotAllowed, req{method: post, target: "/healthz"})
		c.run(s, 200, "", req{method: get, target: "/readyz"})
		c.run(s, 200, "", req{method: get, target: "/metrics"})
		c.run(s, 405, TypeMethodNotAllowed, req{method: put, target: "/metrics"})
		c.run(s, 200, "", req{method: get, target: "/openapi.json"})
		c.run(s, 404, TypeNotFound, req{method: get, target: "//openapi.json"})
		c.run(s, 404, TypeNotFound, req{method: get, target: "/v2/x"})
		c.run(s, 404, TypeNotFound, req{method: get, target: "/v1/users/n1"})
	})

	// No cap: remaining and cap are null.
	t.Run("no cap", func(t *testing.T) {
		s := newTestServer(t, func(cfg *Config) { cfg.UserBudget = math.Inf(1) })
		tok := token(s, "n1")
		c.run(s, 200, "", req{method: get, target: "/v1/users/n1/recommendations?k=2", token: tok})
		c.run(s, 200, "", req{method: post, target: "/v1/users/n1/recommendations?k=2", token: tok})
		c.run(s, 200, "", req{method: get, target: "/v1/users/n1/budget", token: tok})
	})

	// Rate limits: 429 with Retry-After, per token, per address and after
	// failed authentications, on documented and unrouted /v1/ paths.
	t.Run("rate limits", func(t *testing.T) {
		s := newTestServer(t, func(cfg *Config) { cfg.RateLimit, cfg.RateBurst, cfg.AuthFailLimit, cfg.AuthFailBurst = 1, 2, 1, 1 })
		withClock(s)
		tok := token(s, "n1")
		// Per token: each request from its own address.
		c.run(s, 200, "", req{remote: "10.0.0.1:1", method: get, target: "/v1/users/n1/budget", token: tok})
		c.run(s, 200, "", req{remote: "10.0.0.2:1", method: get, target: "/v1/users/n1/protected", token: tok})
		c.run(s, 429, TypeRateLimited, req{remote: "10.0.0.3:1", method: get, target: "/v1/users/n1/recommendations?k=2", token: tok})
		c.run(s, 429, TypeRateLimited, req{remote: "10.0.0.4:1", method: post, target: "/v1/users/n1/recommendations?k=2", token: tok})
		c.run(s, 429, TypeRateLimited, req{remote: "10.0.0.5:1", method: put, target: "/v1/users/n1/protected", token: tok, body: `{"protected":[]}`})
		// Failed authentications: the address is blocked on every /v1/ route.
		c.run(s, 401, TypeUnauthorized, req{remote: "10.0.1.1:1", method: get, target: "/v1/users/n1/budget", token: "nonsense"})
		c.run(s, 429, TypeRateLimited, req{remote: "10.0.1.1:1", method: post, target: "/v1/admin/users", token: adminTok, body: `{"user":"n2"}`})
		for i, r := range []req{
			{method: del, target: "/v1/admin/users/n1/token", token: adminTok},
			{method: post, target: "/v1/admin/reload", token: adminTok},
			{method: get, target: "/v1/admin/state", token: adminTok},
			{method: get, target: "/v1/users/n1/budget", token: tok},
		} {
			r.remote = fmt.Sprintf("10.0.2.%d:1", i+1) // fails once, then is blocked
			c.run(s, 401, TypeUnauthorized, req{remote: r.remote, method: get, target: "/v1/admin/state", token: "nonsense"})
			c.run(s, 429, TypeRateLimited, r)
		}
		// Per address, before routing: an unrouted /v1/ path too.
		for i, want := range []int{404, 404, 429} {
			typ := TypeNotFound
			if want == 429 {
				typ = TypeRateLimited
			}
			c.run(s, want, typ, req{remote: "10.0.3.1:1", method: get, target: fmt.Sprintf("/v1/nothing/%d", i)})
		}
		c.run(s, 200, "", req{remote: "10.0.3.1:1", method: get, target: "/healthz"}) // probes are not limited
	})

	// Not ready while draining.
	s.draining.Store(true)
	c.run(s, 503, TypeUnavailable, req{method: get, target: "/readyz"})
	s.draining.Store(false)

	c.checkCoverage()
}

// TestOpenAPIValidatorCatches is the negative control: responses of the
// real handler, altered, must be reported by the validator.
func TestOpenAPIValidatorCatches(t *testing.T) {
	c := newAPIChecker(t)
	s := newTestServer(t, func(cfg *Config) { cfg.UserBudget = 10 })
	withClock(s)
	ok := func(r req) exchange {
		q := r.build()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, q)
		ex := exchange{req: q, reqBody: []byte(r.body), status: w.Code, header: w.Header(), body: w.Body.Bytes()}
		if err := c.validate(s.Server, ex, false); err != nil {
			t.Fatalf("%s %s: the unaltered response (%d %s) is refused: %v", r.method, r.target, ex.status, ex.body, err)
		}
		return ex
	}
	tok := s.token("n1")
	budget := ok(req{method: "GET", target: "/v1/users/n1/budget", token: tok})
	recs := ok(req{method: "GET", target: "/v1/users/n1/recommendations?k=3", token: tok})
	s.token("n2")
	revoke := ok(req{method: "DELETE", target: "/v1/admin/users/n2/token", token: adminTok})
	unauth := ok(req{method: "GET", target: "/v1/users/n1/budget"})
	notAllowed := ok(req{method: "HEAD", target: "/v1/users/n1/budget", token: tok})
	ready := ok(req{method: "GET", target: "/readyz"})
	health := ok(req{method: "GET", target: "/healthz"})
	state := ok(req{method: "GET", target: "/v1/admin/state", token: adminTok})
	if revoke.status != 204 || unauth.status != 401 || notAllowed.status != 405 {
		t.Fatalf("statuses %d %d %d", revoke.status, unauth.status, notAllowed.status)
	}
	s2 := newTestServer(t, func(cfg *Config) { cfg.AuthFailLimit, cfg.AuthFailBurst = 1, 1 })
	withClock(s2)
	for range 2 {
		s2.do("GET", "/v1/users/n1/budget", "nonsense", "")
	}
	q := req{method: "GET", target: "/v1/users/n1/budget", token: "nonsense"}.build()
	w := httptest.NewRecorder()
	s2.ServeHTTP(w, q)
	limited := exchange{req: q, status: w.Code, header: w.Header(), body: w.Body.Bytes()}
	if limited.status != 429 {
		t.Fatalf("rate limit: %d", limited.status)
	}
	if err := c.validate(s2.Server, limited, false); err != nil {
		t.Fatalf("the unaltered 429 is refused: %v", err)
	}

	// alter returns a copy of ex with its body edited (a JSON object) and
	// its headers changed by hdr (name, value; "" deletes).
	alter := func(ex exchange, edit func(m map[string]any), hdr ...string) exchange {
		out := ex
		out.header = ex.header.Clone()
		if edit != nil {
			var m map[string]any
			if err := json.Unmarshal(ex.body, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			b, _ := json.Marshal(m)
			out.body = b
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i+1] == "" {
				out.header.Del(hdr[i])
			} else {
				out.header.Set(hdr[i], hdr[i+1])
			}
		}
		return out
	}
	for name, ex := range map[string]exchange{
		"budget: required member removed":  alter(budget, func(m map[string]any) { delete(m, "releases") }),
		"budget: number as a string":       alter(budget, func(m map[string]any) { m["spent"] = fmt.Sprint(m["spent"]) }),
		"budget: integer as a fraction":    alter(budget, func(m map[string]any) { m["releases"] = 1.5 }),
		"budget: remaining of wrong type":  alter(budget, func(m map[string]any) { m["remaining"] = "lots" }),
		"budget: undeclared member":        alter(budget, func(m map[string]any) { m["secret"] = "x" }),
		"budget: party total removed":      alter(budget, func(m map[string]any) { delete(m, "party_unbounded") }),
		"budget: party spent as a string":  alter(budget, func(m map[string]any) { m["party_spent"] = "unbounded" }),
		"budget: other content type":       alter(budget, nil, "Content-Type", "text/plain"),
		"budget: no X-Request-Id":          alter(budget, nil, "X-Request-Id", ""),
		"budget: undocumented status":      func() exchange { e := budget; e.status = 418; return e }(),
		"recommendations: list of numbers": alter(recs, func(m map[string]any) { m["recommendations"] = []int{1, 2} }),
		"recommendations: no guarantee":    alter(recs, func(m map[string]any) { delete(m, "guarantee") }),
		"recommendations: fresh as string": alter(recs, func(m map[string]any) { m["fresh"] = "true" }),
		"recommendations: no release_id":   alter(recs, func(m map[string]any) { delete(m, "release_id") }),
		"state: no node count":             alter(state, func(m map[string]any) { delete(m, "nodes") }),
		"state: loaded not a date-time":    alter(state, func(m map[string]any) { m["loaded"] = "yesterday" }),
		"healthz: another status":          alter(health, func(m map[string]any) { m["status"] = "sick" }),
		"revoke: a body on a 204":          func() exchange { e := revoke; e.body = []byte(`{}`); return e }(),
		"401: problem type unknown":        alter(unauth, func(m map[string]any) { m["type"] = "teapot" }),
		"401: no title":                    alter(unauth, func(m map[string]any) { delete(m, "title") }),
		"401: status member differs":       alter(unauth, func(m map[string]any) { m["status"] = 403 }),
		"401: as application/json":         alter(unauth, nil, "Content-Type", "application/json"),
		"401: no WWW-Authenticate":         alter(unauth, nil, "WWW-Authenticate", ""),
		"405: no Allow":                    alter(notAllowed, nil, "Allow", ""),
		"429: no Retry-After":              alter(limited, nil, "Retry-After", ""),
		"429: Retry-After 0":               alter(limited, nil, "Retry-After", "0"),
		"readyz: another status":           alter(ready, func(m map[string]any) { m["status"] = "starting" }),
	} {
		if err := c.validate(s.Server, ex, false); err == nil { // s2 has the same routes
			t.Errorf("%s: not reported by the validator (%d %v %s)", name, ex.status, ex.header, ex.body)
		} else {
			t.Logf("%s: %v", name, firstLine(err))
		}
	}
}

func firstLine(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}
