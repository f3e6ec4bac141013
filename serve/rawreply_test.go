package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCannedProblem: every reply net/http writes itself becomes a problem
// document with the same status; anything else is left alone.
func TestCannedProblem(t *testing.T) {
	for _, tc := range []struct {
		in     string
		status int
		typ    string
	}{
		{"HTTP/1.1 400 Bad Request" + cannedSep + "400 Bad Request", 400, TypeInvalidRequest},
		{"HTTP/1.1 431 Request Header Fields Too Large" + cannedSep + "431 Request Header Fields Too Large", 431, TypeHeaderTooLarge},
		{"HTTP/1.1 501 Not Implemented" + cannedSep + "Unsupported transfer encoding", 501, TypeNotImplemented},
		{"HTTP/1.1 400 Bad Request: missing required Host header" + cannedSep + "400 Bad Request: missing required Host header", 400, TypeInvalidRequest},
	} {
		out, ok := cannedProblem([]byte(tc.in))
		if !ok {
			t.Fatalf("%q not recognised", tc.in)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("%q: rewritten reply unreadable: %v\n%s", tc.in, err, out)
		}
		body, _ := io.ReadAll(resp.Body)
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("%q: body %s: %v", tc.in, body, err)
		}
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" || resp.ContentLength != int64(len(body)) ||
			p.Status != tc.status || p.Type != tc.typ || p.Title == "" || !strings.Contains(p.Detail, "could not be parsed") {
			t.Fatalf("%q -> %d %v %+v", tc.in, resp.StatusCode, resp.Header, p)
		}
	}
	for _, in := range []string{
		"",
		"HTTP/1.1 200 OK" + cannedSep + "fine", // not an error status
		"HTTP/1.1 400 Bad Request\r\nDate: x\r\n\r\n", // a handler's reply shape
		"HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nContent-Length: 2\r\n\r\n{}",
		`{"type":"invalid-request"}`, // a body chunk
		"HTTP/1.1 4x0 Bad" + cannedSep + "x",
		"HTTP/1.1 499 Nope" + cannedSep + "x", // no status text
	} {
		if out, ok := cannedProblem([]byte(in)); ok {
			t.Errorf("%q rewritten to %q", in, out)
		}
	}
}

// FuzzCannedProblem: never panics; whatever it rewrites is a well-formed
// HTTP/1.1 problem reply.
func FuzzCannedProblem(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad Request" + cannedSep + "400 Bad Request"))
	f.Add([]byte("HTTP/1.1 431 Request Header Fields Too Large" + cannedSep + "x"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := cannedProblem(b)
		if !ok {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("%q -> unreadable %q: %v", b, out, err)
		}
		body, _ := io.ReadAll(resp.Body)
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || p.Status != resp.StatusCode || resp.StatusCode < 400 {
			t.Fatalf("%q -> %d %s (%v)", b, resp.StatusCode, body, err)
		}
	})
}

// rawExchange sends raw bytes on a fresh connection made by dial and
// returns the parsed reply.
func rawExchange(t *testing.T, dial func() (net.Conn, error), req string) (*http.Response, Problem) {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the reply to %.40q: %v", req, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var p Problem
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("reply to %.40q: %d %s %q", req, resp.StatusCode, ct, body)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("reply to %.40q: %s: %v", req, body, err)
	}
	return resp, p
}

// malformed are requests net/http refuses before any handler runs.
var malformed = []struct {
	name, req string
	status    int
	typ       string
}{
	{"garbage request line", "THIS IS NOT HTTP\r\n\r\n", 400, TypeInvalidRequest},
	{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, TypeInvalidRequest},
	{"header too large", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n", 431, TypeHeaderTooLarge},
	{"transfer encoding", "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, TypeNotImplemented},
}

// TestServeMalformedRequestsPlain: over plain HTTP the service answers
// requests net/http cannot parse with problem documents, and well-formed
// requests on the same listener are untouched.
func TestServeMalformedRequestsPlain(t *testing.T) {
	s := newTestServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	dial := func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			resp, p := rawExchange(t, dial, tc.req)
			if resp.StatusCode != tc.status || p.Status != tc.status || p.Type != tc.typ {
				t.Fatalf("%d %+v, want %d %s", resp.StatusCode, p, tc.status, tc.typ)
			}
		})
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", resp.StatusCode)
	}
}

// TestServeMalformedRequestsTLS: the same over TLS for HTTP/1.1
// connections, HTTP/2 still negotiated for clients offering it, and a
// plain-HTTP request to the TLS port answered with a problem document.
func TestServeMalformedRequestsTLS(t *testing.T) {
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
	addr := ln.Addr().String()
	pool := x509.NewCertPool()
	pool.AddCert(c.leaf)
	dial := func() (net.Conn, error) {
		return tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
	}
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			resp, p := rawExchange(t, dial, tc.req)
			if resp.StatusCode != tc.status || p.Type != tc.typ {
				t.Fatalf("%d %+v, want %d %s", resp.StatusCode, p, tc.status, tc.typ)
			}
		})
	}
	resp, p := rawExchange(t, func() (net.Conn, error) { return net.Dial("tcp", addr) }, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 400 || p.Type != TypeInvalidRequest || !strings.Contains(p.Detail, "HTTPS") {
		t.Fatalf("plain HTTP on the TLS port: %d %+v", resp.StatusCode, p)
	}
	h2, err := tlsClient(true, c).Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	h2.Body.Close()
	if h2.ProtoMajor != 2 || h2.StatusCode != http.StatusOK {
		t.Fatalf("h2 client: %s %d", h2.Proto, h2.StatusCode)
	}
	// A client that connects and never speaks TLS delays nobody.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	ok, err := tlsClient(false, c).Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	ok.Body.Close()
}

// TestTLSListenerClose: Accept fails once the listener is closed, and a
// second Close is harmless.
func TestTLSListenerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := validCert(t, "x")
	cr, err := NewCertReloader(certFiles(t, c))
	if err != nil {
		t.Fatal(err)
	}
	tl := TLSListener(ln, cr)
	errc := make(chan error, 1)
	go func() { _, err := tl.Accept(); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Fatal("Accept after Close returned a connection")
	}
	tl.Close()
	if _, err := tl.Accept(); err == nil {
		t.Fatal("Accept on a closed listener succeeded")
	}
}
