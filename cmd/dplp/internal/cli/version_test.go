package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	out, _, err := run(t, "version")
	if err != nil || !strings.HasPrefix(out, "dplp ") || !strings.Contains(out, "revision ") {
		t.Fatalf("version: %v %q", err, out)
	}
	out, _, err = run(t, "version", "--json")
	var m map[string]any
	if err != nil || json.Unmarshal([]byte(out), &m) != nil || m["revision"] == nil || m["go_version"] == nil {
		t.Fatalf("version --json: %v %q", err, out)
	}
}
