// Package buildinfo reports what binary is running: the module version, the
// VCS revision and commit time, whether the work tree was modified, and the
// Go version, all read from the build information the Go toolchain embeds
// (runtime/debug.ReadBuildInfo). `go build` and `go install` inside a git
// checkout stamp the revision; `go run` and test binaries do not, and the
// fields then say "unknown".
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info describes the running binary.
type Info struct {
	Module    string `json:"module"`
	Version   string `json:"version"`     // module version, "(devel)" for a local build
	Revision  string `json:"revision"`    // VCS revision, "unknown" when not stamped
	Time      string `json:"commit_time"` // VCS commit time (RFC 3339), "unknown" when not stamped
	Modified  bool   `json:"modified"`    // the work tree had uncommitted changes
	GoVersion string `json:"go_version"`
}

// Get reads the running binary's build information.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown", Revision: "unknown", Time: "unknown", GoVersion: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, Revision: "unknown", Time: "unknown", GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is a one-line summary, for logs.
func (in Info) String() string {
	rev := in.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if in.Modified {
		rev += "+modified"
	}
	return fmt.Sprintf("dplp %s (revision %s, committed %s, %s)", in.Version, rev, in.Time, in.GoVersion)
}
