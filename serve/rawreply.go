package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// net/http answers some malformed HTTP/1.x requests itself, before any
// handler runs, by writing a canned text/plain reply straight to the
// connection: "400 Bad Request" for an unparsable request line or header,
// "431 Request Header Fields Too Large" beyond MaxHeaderBytes, "501 Not
// Implemented" for an unsupported transfer encoding, and a few 400s with a
// reason ("400 Bad Request: missing required Host header"). Every one of
// them is a single Write of
//
//	HTTP/1.1 <code> <text>\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n<body>
//
// so a connection wrapper can recognise it exactly and write an RFC 9457
// problem document instead, with the same status, a Content-Length and the
// canned text as its detail. Handlers' responses go through net/http's
// response writer, which never produces this shape (it always sets
// Content-Length or chunked encoding and a Date header), so nothing else is
// touched.
//
// HTTP/2 has no such replies (malformed frames end the stream or the
// connection). A plain-HTTP listener is wrapped by Serve. Under TLS the
// wrapper would hide the *tls.Conn net/http needs to hand a connection to
// HTTP/2, so TLSListener completes each handshake itself, off the accept
// loop, and wraps only connections that did not negotiate "h2".

// cannedSep is what follows the status line of a canned reply.
const cannedSep = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// cannedProblem returns the problem+json replacement of a canned reply b,
// or false when b is anything else.
func cannedProblem(b []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(b, []byte(proto)) {
		return nil, false
	}
	line, body, ok := bytes.Cut(b[len(proto):], []byte(cannedSep))
	if !ok || len(line) < 5 || line[3] != ' ' || bytes.ContainsAny(line, "\r\n") {
		return nil, false
	}
	code, err := strconv.Atoi(string(line[:3]))
	if err != nil || code < 400 || code > 599 || http.StatusText(code) == "" {
		return nil, false
	}
	typ := TypeInvalidRequest
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		typ = TypeHeaderTooLarge
	case http.StatusNotImplemented:
		typ = TypeNotImplemented
	}
	doc, err := json.Marshal(Problem{Type: typ, Title: problemTitles[typ], Status: code,
		Detail: "the request could not be parsed: " + string(body)})
	if err != nil {
		return nil, false
	}
	var out bytes.Buffer
	out.WriteString(proto)
	out.Write(line[:3])
	out.WriteByte(' ')
	out.WriteString(http.StatusText(code))
	out.WriteString("\r\nContent-Type: application/problem+json\r\nConnection: close\r\nContent-Length: ")
	out.WriteString(strconv.Itoa(len(doc)))
	out.WriteString("\r\n\r\n")
	out.Write(doc)
	return out.Bytes(), true
}

// problemConn rewrites canned replies written to it (cannedProblem).
type problemConn struct{ net.Conn }

func (c *problemConn) Write(b []byte) (int, error) {
	if r, ok := cannedProblem(b); ok {
		if _, err := c.Conn.Write(r); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// CloseWrite passes through, so net/http can half-close after a 431 as it
// does on a bare TCP or TLS connection.
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// problemListener wraps accepted connections in problemConn, except TLS
// connections (a *tls.Conn must reach net/http unwrapped for HTTP/2; use
// TLSListener, which wraps the HTTP/1.1 ones itself).
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	switch c.(type) {
	case *tls.Conn, *problemConn:
		return c, nil
	}
	return &problemConn{Conn: c}, nil
}

// handshakeTimeout bounds a TLS handshake done by tlsListener.
const handshakeTimeout = 10 * time.Second

// tlsListener accepts TCP connections and completes their TLS handshakes
// in their own goroutines (a slow client delays no one), then hands over
// "h2" connections as *tls.Conn and HTTP/1.x ones wrapped in problemConn.
// A plain-HTTP request sent to it gets a problem+json 400 in clear text.
type tlsListener struct {
	ln        net.Listener
	cfg       *tls.Config
	once      sync.Once
	closeOnce sync.Once
	out       chan net.Conn
	errc      chan error
	done      chan struct{}
}

func newTLSListener(ln net.Listener, cfg *tls.Config) *tlsListener {
	return &tlsListener{ln: ln, cfg: cfg, out: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{})}
}

func (l *tlsListener) start() {
	go func() {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				select {
				case l.errc <- err:
				case <-l.done:
				}
				return
			}
			go l.handshake(c)
		}
	}()
}

func (l *tlsListener) handshake(raw net.Conn) {
	tc := tls.Server(raw, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader[:]) {
			// Plain HTTP on the TLS port: answer in clear, as net/http does.
			if r, ok := cannedProblem([]byte("HTTP/1.1 400 Bad Request" + cannedSep + "the client sent an HTTP request to an HTTPS server")); ok {
				rh.Conn.SetWriteDeadline(time.Now().Add(time.Second))
				rh.Conn.Write(r)
			}
		}
		raw.Close()
		return
	}
	var c net.Conn = tc
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		c = &problemConn{Conn: tc}
	}
	select {
	case l.out <- c:
	case <-l.done:
		c.Close()
	}
}

// looksLikeHTTP reports whether the first bytes of a connection are an
// HTTP/1.x method (what crypto/tls reports as a bad record header).
func looksLikeHTTP(hdr []byte) bool {
	for _, m := range []string{"GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "} {
		n := min(len(m), len(hdr))
		if string(hdr[:n]) == m[:n] {
			return true
		}
	}
	return false
}

// Accept returns the next connection whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	l.once.Do(l.start)
	select {
	case c := <-l.out:
		return c, nil
	case err := <-l.errc:
		l.errc <- err // every later Accept fails the same way
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections still in their handshake are closed.
func (l *tlsListener) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.ln.Close()
	})
	return err
}

// Addr is the underlying listener's address.
func (l *tlsListener) Addr() net.Addr { return l.ln.Addr() }
