package serve

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CertReloader serves a TLS certificate and key loaded from two PEM files
// and reloads them on demand, so certificates can be rotated without a
// restart (`dplp serve` reloads it on SIGHUP and on POST
// /v1/admin/reload, through ReloadHook).
//
// Contract:
//   - NewCertReloader loads the pair once and fails if it cannot: a server
//     never starts without a usable certificate.
//   - GetCertificate (for tls.Config.GetCertificate) always returns the
//     last pair that loaded successfully; it never fails and never reads
//     the files, so handshakes cost no I/O.
//   - Reload reads both files again. When they do not form a valid pair
//     (unreadable, malformed PEM, key not matching the certificate,
//     certificate expired or not yet valid), it returns an error naming
//     the files and keeps serving the previous certificate. When they do,
//     new handshakes get the new certificate at once; connections already
//     established keep theirs.
//   - Errors name the files and the reason, never key material.
//
// It is safe for concurrent use.
type CertReloader struct {
	certFile, keyFile string
	now               func() time.Time // time source for the validity check (tests)

	mu   sync.Mutex // serialises Reload
	cert atomic.Pointer[tls.Certificate]
}

// NewCertReloader loads the certificate chain in certFile and the private
// key in keyFile (PEM, as written by openssl, certbot or cert-manager; the
// certificate file may hold intermediates after the leaf). Both are
// required.
func NewCertReloader(certFile, keyFile string) (*CertReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("serve: tls: both a certificate file and a key file are required (--tls-cert and --tls-key)")
	}
	r := &CertReloader{certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload re-reads the certificate and key files. On error the previously
// loaded certificate stays in use (see the type's contract).
func (r *CertReloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return fmt.Errorf("serve: tls: reading the certificate: %w", err) // names the file
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return fmt.Errorf("serve: tls: reading the key: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM) // its errors say which input is wrong, never show it
	if err != nil {
		return fmt.Errorf("serve: tls: certificate %s, key %s: %w", r.certFile, r.keyFile, err)
	}
	leaf := c.Leaf
	if leaf == nil { // filled in by LoadX509KeyPair since Go 1.23; parse if not
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("serve: tls: certificate %s: %w", r.certFile, err)
		}
		c.Leaf = leaf
	}
	now := r.now()
	if now.After(leaf.NotAfter) {
		return fmt.Errorf("serve: tls: certificate %s expired at %s", r.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return fmt.Errorf("serve: tls: certificate %s is not valid before %s", r.certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	r.cert.Store(&c)
	return nil
}

// GetCertificate returns the current certificate; it has the signature of
// tls.Config.GetCertificate.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// Leaf returns the parsed leaf of the current certificate (for logs and
// expiry checks). Callers must not modify it.
func (r *CertReloader) Leaf() *x509.Certificate { return r.cert.Load().Leaf }

// LogAttrs describes the current certificate for a log line: files,
// subject, DNS names, expiry and the SHA-256 fingerprint of the leaf.
func (r *CertReloader) LogAttrs() []any {
	c := r.cert.Load()
	sum := sha256.Sum256(c.Leaf.Raw)
	return []any{"cert_file", r.certFile, "key_file", r.keyFile, "subject", c.Leaf.Subject.String(),
		"dns_names", c.Leaf.DNSNames, "not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339),
		"sha256", hex.EncodeToString(sum[:])}
}

// ReloadHook returns a function for Config.ReloadHook, so that SIGHUP and
// POST /v1/admin/reload (Server.Reload) rotate the certificate too: it
// calls Reload and, on success, logs the certificate now served (subject,
// expiry, fingerprint). Its error (the previous certificate is still
// served) fails that reload, as Config.ReloadHook documents.
func (r *CertReloader) ReloadHook(log *slog.Logger) func() error {
	return func() error {
		if err := r.Reload(); err != nil {
			return err
		}
		log.Info("tls certificate loaded", r.LogAttrs()...)
		return nil
	}
}

// TLSConfig returns a hardened server configuration serving r's
// certificate: TLS 1.2 at least (TLS 1.3 preferred by every current
// client), for TLS 1.2 only ECDHE key exchange with AEAD ciphers (forward
// secrecy; no CBC, no RSA key exchange), and ALPN offering HTTP/2 ("h2")
// then HTTP/1.1. An http.Server with no TLSConfig of its own serving a
// listener from TLSListener speaks HTTP/2 to clients that offer it.
func TLSConfig(r *CertReloader) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
		CipherSuites: []uint16{ // TLS 1.2 only; TLS 1.3 suites are not configurable (all are AEAD)
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, // required by HTTP/2 (RFC 9113, 9.2.2)
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
}

// TLSListener wraps ln so that every accepted connection speaks TLS with
// TLSConfig(r). Server.Serve on the returned listener serves HTTPS and
// HTTP/2 with no other change. Handshakes run off the accept loop (bounded
// by handshakeTimeout), and HTTP/1.1 connections get net/http's replies to
// unparsable requests as problem documents (rawreply.go); a plain-HTTP
// request to the port is answered with a problem+json 400 in clear text.
func TLSListener(ln net.Listener, r *CertReloader) net.Listener {
	return newTLSListener(ln, TLSConfig(r))
}
