package serve

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert is a self-signed certificate for localhost and 127.0.0.1.
type testCert struct {
	cn               string
	certPEM, keyPEM  []byte
	leaf             *x509.Certificate
	notBefore, until time.Time
}

// newTestCert makes a self-signed ECDSA P-256 certificate named cn, valid
// from notBefore to notAfter.
func newTestCert(t testing.TB, cn string, notBefore, notAfter time.Time) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{cn: cn, leaf: leaf, notBefore: notBefore, until: notAfter,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

func validCert(t testing.TB, cn string) testCert {
	now := time.Now()
	return newTestCert(t, cn, now.Add(-time.Hour), now.Add(24*time.Hour))
}

// writePair writes data to path through a rename, as certificate managers do.
func writeFileAtomic(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsClient returns a client trusting certs; h2 offers HTTP/2 (a custom
// TLS configuration disables it unless forced).
func tlsClient(h2 bool, certs ...testCert) *http.Client {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c.leaf)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: h2,
		DisableKeepAlives: true, // every request makes a new handshake
	}}
}

// servedCert returns the CommonName of the certificate served at addr (a
// new handshake each time).
func servedCert(t testing.TB, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// certFiles writes c into a fresh directory and returns the file names.
func certFiles(t testing.TB, c testCert) (certFile, keyFile string) {
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFileAtomic(t, certFile, c.certPEM)
	writeFileAtomic(t, keyFile, c.keyPEM)
	return certFile, keyFile
}

// startTLS serves h over TLS with r's certificate on a loopback port.
func startTLS(t testing.TB, r *CertReloader, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ErrorLog: slog.NewLogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)).Handler(), slog.LevelWarn)}
	go hs.Serve(TLSListener(ln, r))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// TestTLSServeHealthzHTTP2 runs the real service over TLS: /healthz answers
// over HTTP/2 for a client offering h2 and over HTTP/1.1 for one that does
// not, with TLS 1.2 at least.
func TestTLSServeHealthzHTTP2(t *testing.T) {
	s := newTestServer(t, nil)
	c := validCert(t, "dplp-test")
	cr, err := NewCertReloader(certFiles(t, c))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, TLSListener(ln, cr), 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := "https://" + ln.Addr().String() + "/healthz"
	for _, tc := range []struct {
		name      string
		h2        bool
		wantMajor int
	}{
		{"h2", true, 2},
		{"http1.1", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tlsClient(tc.h2, c).Get(url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /healthz: %d %s", resp.StatusCode, body)
			}
			if resp.ProtoMajor != tc.wantMajor {
				t.Fatalf("protocol %s, want major version %d", resp.Proto, tc.wantMajor)
			}
			if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
				t.Fatalf("connection state %+v: want TLS >= 1.2", resp.TLS)
			}
			if got := resp.TLS.PeerCertificates[0].Subject.CommonName; got != c.cn {
				t.Fatalf("served %q, want %q", got, c.cn)
			}
		})
	}
	// A plain-HTTP request to the TLS port never reaches the service:
	// net/http answers 400 itself.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP on the TLS port: %d %s, want 400", resp.StatusCode, body)
	}
}

// TestTLSServerReload rotates the certificate of a running service through
// Config.ReloadHook: POST /v1/admin/reload and Server.Reload (what SIGHUP
// calls) serve the new pair; a broken pair fails the reload (422) and the
// previous certificate is still served.
func TestTLSServerReload(t *testing.T) {
	a, b, c := validCert(t, "srv-a"), validCert(t, "srv-b"), validCert(t, "srv-c")
	certFile, keyFile := certFiles(t, a)
	cr, err := NewCertReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, func(cfg *Config) { cfg.ReloadHook = cr.ReloadHook(cfg.Logger) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, TLSListener(ln, cr), 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()
	client := tlsClient(true, a, b, c)
	adminReload := func() int {
		t.Helper()
		req, _ := http.NewRequest("POST", "https://"+addr+"/v1/admin/reload", nil)
		req.Header.Set("Authorization", "Bearer "+adminTok)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("admin reload over %s, want HTTP/2", resp.Proto)
		}
		return resp.StatusCode
	}
	rotate := func(tc testCert) {
		writeFileAtomic(t, certFile, tc.certPEM)
		writeFileAtomic(t, keyFile, tc.keyPEM)
	}
	for _, step := range []struct {
		name   string
		files  func()
		reload func() int
		status int
		served string
	}{
		{"admin reload", func() { rotate(b) }, adminReload, http.StatusOK, b.cn},
		{"broken key, admin reload", func() { writeFileAtomic(t, keyFile, []byte("junk")) }, adminReload, http.StatusUnprocessableEntity, b.cn},
		{"Server.Reload (SIGHUP)", func() { rotate(c) }, func() int {
			if err := s.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			return http.StatusOK
		}, http.StatusOK, c.cn},
	} {
		step.files()
		if got := step.reload(); got != step.status {
			t.Fatalf("%s: status %d, want %d", step.name, got, step.status)
		}
		if got := servedCert(t, addr); got != step.served {
			t.Fatalf("%s: served %q, want %q", step.name, got, step.served)
		}
	}
}

// TestTLSOldVersionsRefused: a client capped below TLS 1.2 cannot connect
// (refused by MinVersion, and by the cipher suites, all TLS 1.2 AEADs).
func TestTLSOldVersionsRefused(t *testing.T) {
	c := validCert(t, "old")
	cr, err := NewCertReloader(certFiles(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := TLSConfig(cr); cfg.MinVersion < tls.VersionTLS12 {
		t.Fatalf("MinVersion %s, want TLS 1.2 at least", tls.VersionName(cfg.MinVersion))
	}
	addr := startTLS(t, cr, http.NotFoundHandler())
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: v, MaxVersion: v})
		if err == nil {
			conn.Close()
			t.Fatalf("handshake with max version %s succeeded", tls.VersionName(v))
		}
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	conn.Close()
}

// TestCertReloaderReload rotates the files behind a running server: a valid
// new pair is served by the next handshake; every broken one is refused
// with an error naming the file, and the previous certificate stays.
func TestCertReloaderReload(t *testing.T) {
	now := time.Now()
	a := validCert(t, "cert-a")
	b := validCert(t, "cert-b")
	expired := newTestCert(t, "expired", now.Add(-48*time.Hour), now.Add(-time.Hour))
	future := newTestCert(t, "future", now.Add(time.Hour), now.Add(48*time.Hour))
	for _, tc := range []struct {
		name             string
		cert, key        []byte // nil: remove the file
		wantErr          string // "" : success
		wantServedAfterB bool   // the new pair (b) is served
	}{
		{name: "rotated pair", cert: b.certPEM, key: b.keyPEM, wantServedAfterB: true},
		{name: "garbage certificate", cert: []byte("not a certificate\n"), key: b.keyPEM, wantErr: "certificate input"},
		{name: "truncated certificate", cert: b.certPEM[:len(b.certPEM)/2], key: b.keyPEM, wantErr: "certificate input"},
		{name: "empty key", cert: b.certPEM, key: []byte{}, wantErr: "key input"},
		{name: "key of another certificate", cert: b.certPEM, key: a.keyPEM, wantErr: "does not match"},
		{name: "certificate written, key not yet", cert: b.certPEM, key: nil, wantErr: "tls.key: no such file"},
		{name: "expired", cert: expired.certPEM, key: expired.keyPEM, wantErr: "expired"},
		{name: "not yet valid", cert: future.certPEM, key: future.keyPEM, wantErr: "not valid before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certFile, keyFile := certFiles(t, a)
			cr, err := NewCertReloader(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			addr := startTLS(t, cr, http.NotFoundHandler())
			if got := servedCert(t, addr); got != a.cn {
				t.Fatalf("before reload: served %q, want %q", got, a.cn)
			}
			writeFileAtomic(t, certFile, tc.cert)
			if tc.key == nil {
				os.Remove(keyFile)
			} else {
				writeFileAtomic(t, keyFile, tc.key)
			}
			err = cr.Reload()
			want := a.cn
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Reload: %v", err)
				}
				want = b.cn
			} else {
				if err == nil {
					t.Fatalf("Reload succeeded, want an error containing %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Reload error %q does not contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY") || bytes.Contains([]byte(err.Error()), a.keyPEM[30:60]) {
					t.Fatalf("error shows key material: %v", err)
				}
			}
			if got := servedCert(t, addr); got != want {
				t.Fatalf("after reload: served %q, want %q", got, want)
			}
			if got := cr.Leaf().Subject.CommonName; got != want {
				t.Fatalf("Leaf: %q, want %q", got, want)
			}
			// The reloader recovers once the files are fixed.
			writeFileAtomic(t, certFile, b.certPEM)
			writeFileAtomic(t, keyFile, b.keyPEM)
			if err := cr.Reload(); err != nil {
				t.Fatalf("Reload after fixing the files: %v", err)
			}
			if got := servedCert(t, addr); got != b.cn {
				t.Fatalf("after fixing the files: served %q, want %q", got, b.cn)
			}
		})
	}
}

// TestNewCertReloaderErrors: start-up fails on a missing or broken pair.
func TestNewCertReloaderErrors(t *testing.T) {
	a := validCert(t, "a")
	certFile, keyFile := certFiles(t, a)
	expired := newTestCert(t, "old", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	expCert, expKey := certFiles(t, expired)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"no certificate", "", keyFile, "--tls-cert and --tls-key"},
		{"no key", certFile, "", "--tls-cert and --tls-key"},
		{"missing certificate", missing, keyFile, "reading the certificate: open " + missing},
		{"missing key", certFile, missing, "reading the key: open " + missing},
		{"key and certificate swapped", keyFile, certFile, "inputs may have been switched"},
		{"expired", expCert, expKey, "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewCertReloader(tc.cert, tc.key)
			if err == nil {
				t.Fatalf("NewCertReloader succeeded (%v), want an error containing %q", r.LogAttrs(), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestCertReloaderConcurrent: handshakes during reloads always get one of
// the two complete pairs (run with -race).
func TestCertReloaderConcurrent(t *testing.T) {
	a, b := validCert(t, "a"), validCert(t, "b")
	dirA, dirB := t.TempDir(), t.TempDir()
	for _, p := range []struct {
		dir string
		c   testCert
	}{{dirA, a}, {dirB, b}} {
		writeFileAtomic(t, filepath.Join(p.dir, "c"), p.c.certPEM)
		writeFileAtomic(t, filepath.Join(p.dir, "k"), p.c.keyPEM)
	}
	link := filepath.Join(t.TempDir(), "live")
	if err := os.Symlink(dirA, link); err != nil {
		t.Fatal(err)
	}
	cr, err := NewCertReloader(filepath.Join(link, "c"), filepath.Join(link, "k"))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := cr.GetCertificate(nil)
				if err != nil || c == nil || c.Leaf == nil {
					t.Errorf("GetCertificate: %v, %v", c, err)
					return
				}
				if cn := c.Leaf.Subject.CommonName; cn != "a" && cn != "b" {
					t.Errorf("served %q", cn)
					return
				}
			}
		}()
	}
	for i := range 20 {
		target := dirA
		if i%2 == 0 {
			target = dirB
		}
		tmp := link + ".new"
		os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, link); err != nil {
			t.Fatal(err)
		}
		if err := cr.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestCertReloaderReloadHook: the hook for Config.ReloadHook rotates the
// certificate and logs it; a failure returns the error and keeps the
// previous certificate. Server.Reload (SIGHUP, POST /v1/admin/reload)
// calls it.
func TestCertReloaderReloadHook(t *testing.T) {
	a, b := validCert(t, "hook-a"), validCert(t, "hook-b")
	certFile, keyFile := certFiles(t, a)
	cr, err := NewCertReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	hook := cr.ReloadHook(slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil)))

	writeFileAtomic(t, certFile, []byte("broken"))
	if err := hook(); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("hook on a broken certificate: %v, want an error naming %s", err, certFile)
	}
	if got := cr.Leaf().Subject.CommonName; got != a.cn {
		t.Fatalf("after a failed reload: %q, want %q", got, a.cn)
	}
	if logs.Len() != 0 {
		t.Fatalf("a failed reload logged a new certificate: %s", logs.String())
	}

	writeFileAtomic(t, certFile, b.certPEM)
	writeFileAtomic(t, keyFile, b.keyPEM)
	if err := hook(); err != nil {
		t.Fatal(err)
	}
	if got := cr.Leaf().Subject.CommonName; got != b.cn {
		t.Fatalf("after the hook: %q, want %q", got, b.cn)
	}
	for _, want := range []string{`"msg":"tls certificate loaded"`, `"subject":"CN=hook-b"`, `"not_after":"`, `"sha256":"`, `"cert_file":` + strconv.Quote(certFile)} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %s lacks %s", logs.String(), want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
