package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeConfigAndTLSFlags: serve reads --config (a bad key fails naming
// the file and line, before anything starts) and refuses half a TLS pair.
func TestServeConfigAndTLSFlags(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "serve.conf")
	os.WriteFile(conf, []byte("# dplp serve\nlisten = 127.0.0.1:0\nno-such-flag = 1\n"), 0o600)
	_, _, err := run(t, "serve", "--config", conf)
	if err == nil || !strings.Contains(err.Error(), conf+":3") {
		t.Fatalf("bad config key: %v", err)
	}
	_, _, err = run(t, "serve", "--graph", "g", "--model", "m", "--admin-token-file", "a", "--tls-cert", "c.pem")
	if err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
		t.Fatalf("half a TLS pair: %v", err)
	}
}
