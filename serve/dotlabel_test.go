package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDotLabelsRefused: no token is issued for the labels "." and "..",
// which no URL path can carry; other odd labels still get one.
func TestDotLabelsRefused(t *testing.T) {
	fx := testFixture(t)
	dir := t.TempDir()
	g := filepath.Join(dir, "g.txt")
	raw, err := os.ReadFile(fx.graph)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(g, append(raw, []byte(". n1\n.. n2\n.x n3\n")...), 0o600)
	s := newTestServer(t, func(c *Config) { c.GraphPath = g })
	for _, c := range []struct {
		label  string
		status int
	}{{".", 400}, {"..", 400}, {".x", 201}, {"n1", 201}} {
		r := s.do("POST", "/v1/admin/users", adminTok, `{"user":`+jsonString(c.label)+`}`)
		if r.status != c.status {
			t.Errorf("label %q: %d %s, want %d", c.label, r.status, r.body, c.status)
		}
		if c.status == 400 && !strings.Contains(string(r.body), "removed from URL paths") {
			t.Errorf("label %q: %s", c.label, r.body)
		}
	}
}
