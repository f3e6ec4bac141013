package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// Tokens.
//
// A user token is "<id>.<secret>": id is the user's label in unpadded
// base64url (not secret: it only says whose token it claims to be, so that
// a valid token used on another user's resources can be told apart (403)
// from an invalid one (401) without a lookup by hash), secret is 32 bytes
// from crypto/rand in unpadded base64url. The token is shown once, when it
// is issued; the store keeps only SHA-256(token) (Store.PutToken), and a
// presented token is checked by comparing SHA-256 hashes with
// crypto/subtle.ConstantTimeCompare. Issuing a new token for a user
// replaces the old one; revoking deletes it.
//
// The admin token is configured (Config.AdminToken, or the file named by
// Config.AdminTokenFile / --admin-token-file, re-read by reloads); it is
// kept in memory only as its SHA-256 hash (and the previous one's during a
// rotation's grace period).
//
// Memory. Authenticating an unknown token must not cost memory: a claimed
// label is looked up (and its answer cached) only when it is at most
// MaxLabelBytes long and a node of the served graph, so the token cache
// holds at most one entry per node, within its byte budget
// (Config.TokenCacheBytes), each for at most the cache TTL.

const secretBytes = 32

// MaxLabelBytes is the longest user label the service issues tokens for
// and authenticates.
const MaxLabelBytes = 1024

var b64 = base64.RawURLEncoding

// newToken returns a fresh token for user and its hash.
func newToken(user string) (string, []byte, error) {
	var secret [secretBytes]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", nil, err
	}
	tok := b64.EncodeToString([]byte(user)) + "." + b64.EncodeToString(secret[:])
	h := sha256.Sum256([]byte(tok))
	return tok, h[:], nil
}

// tokenUser returns the user a token claims to belong to.
func tokenUser(tok string) (string, bool) {
	id, secret, ok := strings.Cut(tok, ".")
	if !ok || id == "" || len(id) > b64.EncodedLen(MaxLabelBytes) || len(secret) != b64.EncodedLen(secretBytes) {
		return "", false
	}
	if _, err := b64.DecodeString(secret); err != nil {
		return "", false
	}
	u, err := b64.DecodeString(id)
	if err != nil || len(u) == 0 {
		return "", false
	}
	return string(u), true
}

// bearer extracts the bearer token of r ("" if none).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// userOf authenticates a user token: the user it belongs to, or "" when it
// is malformed, unknown or revoked. err is a store failure. Only tokens
// claiming a node of the served graph reach the store (and the cache).
func (s *Server) userOf(ctx context.Context, tok string) (string, error) {
	u, ok := tokenUser(tok)
	if !ok {
		return "", nil
	}
	if st := s.state.Load(); st == nil {
		return "", nil
	} else if _, node := st.g.ID(u); !node {
		return "", nil
	}
	stored, found, err := s.store.TokenHash(ctx, u)
	if err != nil || !found {
		return "", err
	}
	h := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(h[:], stored) != 1 {
		return "", nil
	}
	return u, nil
}

var (
	errNoToken      = problem(http.StatusUnauthorized, TypeUnauthorized, "missing bearer token (Authorization: Bearer TOKEN)")
	errBadToken     = problem(http.StatusUnauthorized, TypeUnauthorized, "invalid, unknown or revoked token")
	errAdminOnly    = problem(http.StatusForbidden, TypeForbidden, "this route needs the admin token")
	errAdminNotUser = problem(http.StatusForbidden, TypeForbidden, "the admin token does not give access to a user's lists, budget or marks")
	errOtherUser    = problem(http.StatusForbidden, TypeForbidden, "a token gives access to its own user's resources only")
)

// authFailed counts a failed authentication (401) against r's client
// address and returns p.
func (s *Server) authFailed(r *http.Request, p *Problem) *Problem {
	s.failLim.take(infoOf(r).client, s.now())
	return p
}

// authBlocked is the 429 for a client address past its failed
// authentication limit (nil when it is not).
func (s *Server) authBlocked(r *http.Request) *Problem {
	if ok, wait := s.failLim.check(infoOf(r).client, s.now()); !ok {
		s.met.rateLimited.WithLabelValues("auth_failures").Inc()
		return tooMany("too many failed authentications from this address", wait)
	}
	return nil
}

// authAdmin checks that r carries the admin token.
func (s *Server) authAdmin(r *http.Request) *Problem {
	if p := s.authBlocked(r); p != nil {
		return p
	}
	tok := bearer(r)
	if tok == "" {
		return s.authFailed(r, errNoToken)
	}
	if s.isAdmin(tok) {
		return nil
	}
	u, err := s.userOf(r.Context(), tok)
	if err != nil {
		return s.internal(r, "token lookup", err)
	}
	if u != "" {
		return errAdminOnly
	}
	return s.authFailed(r, errBadToken)
}

// authUser checks that r carries the token of user label, then takes one
// request from the user's rate limit.
func (s *Server) authUser(r *http.Request, label string) *Problem {
	if p := s.authBlocked(r); p != nil {
		return p
	}
	tok := bearer(r)
	if tok == "" {
		return s.authFailed(r, errNoToken)
	}
	u, err := s.userOf(r.Context(), tok)
	if err != nil {
		return s.internal(r, "token lookup", err)
	}
	switch {
	case u == label:
		if ok, wait := s.userLim.take(u, s.now()); !ok {
			s.met.rateLimited.WithLabelValues("user").Inc()
			return tooMany("too many requests with this token", wait)
		}
		return nil
	case u != "":
		return errOtherUser
	case s.isAdmin(tok):
		return errAdminNotUser
	}
	return s.authFailed(r, errBadToken)
}
