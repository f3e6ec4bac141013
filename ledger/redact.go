package ledger

import (
	"regexp"
	"strings"
)

// Redact returns dsn with every secret it may hold replaced by "***", so
// that it can be printed in errors and logs:
//
//   - the password of URL userinfo (postgres://user:SECRET@host/db);
//   - the value of every query or keyword parameter whose name looks like a
//     secret: any name containing "pass", "pwd", "secret", "token" or "key"
//     (password, sslpassword, passfile, sslkey, ...), in URL queries
//     (?password=SECRET&...) and in keyword/value strings
//     (host=h password='SECRET' ...).
//
// Redaction is syntactic and errs on the side of hiding: a malformed store
// name may lose more than its secrets, never keep one. Every error Open and
// OpenWith return is already redacted (and additionally scrubbed of the
// secret values themselves); call Redact before logging a store name.
func Redact(dsn string) string {
	var b strings.Builder
	rest := dsn
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		// The URL runs to the next white space or quote; its userinfo is
		// what precedes its last '@', the password what follows the
		// userinfo's first ':'.
		end := strings.IndexAny(rest, " \t\n\"'`")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				b.WriteString(rest[:c] + ":***")
				rest = rest[at:]
			}
		}
	}
	return secretParam.ReplaceAllString(b.String(), "${1}${2}=***")
}

// secretParam matches NAME=VALUE where NAME looks like a secret and follows
// the start, '?', '&', ';' or white space; VALUE is a single-quoted string
// (keyword/value syntax, backslash escapes allowed) or runs to the next '&',
// ';', '#' or white space.
var secretParam = regexp.MustCompile(`(?i)(^|[?&;\s])([a-z0-9_.\-]*(?:pass|pwd|secret|token|key)[a-z0-9_.\-]*)\s*=\s*(?:'(?:[^'\\]|\\.)*'?|[^&;#\s]*)`)

// secretsOf returns the secret values in dsn (URL userinfo password, the
// values of secret-looking parameters), both as written and URL-unescaped,
// for scrubbing messages that may quote them without their names (driver
// errors). Values shorter than 3 bytes are skipped: hiding them would
// garble messages and they are not secrets worth the name.
func secretsOf(dsn string) []string {
	var out []string
	add := func(v string) {
		v = strings.Trim(v, "'")
		if len(v) >= 3 {
			out = append(out, v)
			if u, err := urlUnescape(v); err == nil && u != v {
				out = append(out, u)
			}
		}
	}
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				add(rest[c+1 : at])
			}
		}
	}
	// Keyword/value and query parameters.
	for _, m := range secretParam.FindAllString(dsn, -1) {
		if _, v, ok := strings.Cut(m, "="); ok {
			add(strings.TrimSpace(v))
		}
	}
	return out
}

// urlUnescape decodes %XX escapes (and nothing else: '+' stays '+').
func urlUnescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			h, l := unhex(s[i+1]), unhex(s[i+2])
			if h >= 0 && l >= 0 {
				b.WriteByte(byte(h<<4 | l))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// scrubbed is an error whose message has the store's secrets hidden; it
// unwraps to the original error, so errors.Is and errors.As still work.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub returns err with every secret of dsn hidden from its message (nil
// for nil). The store's own messages use Redact already; this catches
// drivers that quote a connection string or a value on their own.
func scrub(dsn string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	hidden := msg
	for _, s := range secretsOf(dsn) {
		hidden = strings.ReplaceAll(hidden, s, "***")
	}
	if hidden == msg {
		return err
	}
	return &scrubbed{hidden, err}
}
