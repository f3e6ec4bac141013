package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
		line string
	}{
		{"stamped", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/dplp/dplp", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-25T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Module: "github.com/dplp/dplp", Version: "v1.2.3", Revision: "0123456789abcdef0123", Time: "2026-11-25T12:00:00Z", Modified: true, GoVersion: "go1.26.8"},
			"dplp v1.2.3 (revision 0123456789ab+modified, committed 2026-11-25T12:00:00Z, go1.26.8)"},
		{"go run", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/dplp/dplp"}},
			Info{Module: "github.com/dplp/dplp", Version: "(devel)", Revision: "unknown", Time: "unknown", GoVersion: "go1.26.8"},
			"dplp (devel) (revision unknown, committed unknown, go1.26.8)"},
	} {
		got := fromBuildInfo(&c.bi)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if got.String() != c.line {
			t.Errorf("%s: %q, want %q", c.name, got.String(), c.line)
		}
	}
	if g := Get(); !strings.HasPrefix(g.GoVersion, "go") {
		t.Errorf("Get: go version %q", g.GoVersion)
	}
}
