// Package version holds st's version, set at build time with
// -ldflags "-X github.com/sophonz/st/internal/version.Version=...", and
// the commit it was built from.
package version

import (
	"runtime/debug"
	"strings"
	"time"
)

// Version is st's version.
var Version = "0.1.0-dev"

// BuiltCommit is the commit that scripts/install passes with
// -ldflags "-X github.com/sophonz/st/internal/version.BuiltCommit=...",
// for builds where Go does not stamp it itself (a git worktree, whose
// .git is a file Go does not read, or GOFLAGS=-buildvcs=false). The
// stamp of Go's own build info comes first.
var BuiltCommit = ""

// Build is what st knows of the build it runs.
type Build struct {
	Commit   string    // the full revision, "" when unknown
	Time     time.Time // the commit's time, when Go stamped it
	Modified bool      // built from a work tree with changes
}

// Current reads the running binary's build: Go's vcs.* build settings
// (go build and go install in a git checkout stamp them), else
// BuiltCommit.
func Current() Build {
	var settings []debug.BuildSetting
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings = bi.Settings
	}
	return fromSettings(settings, BuiltCommit)
}

func fromSettings(settings []debug.BuildSetting, built string) Build {
	var b Build
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if b.Commit == "" && built != "" {
		b.Commit, b.Modified = strings.CutSuffix(built, "-modified")
	}
	return b
}

// String is the build as `st version` prints it after the version:
// "commit 1a2b3c4d5e6f, 2026-12-01" (", modified" when the work tree
// had changes), or what to do when the commit is unknown.
func (b Build) String() string {
	if b.Commit == "" {
		return "commit unknown: built without git's stamp (go run, a git worktree, or -buildvcs=false); scripts/install stamps it"
	}
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	s := "commit " + c
	if !b.Time.IsZero() {
		s += ", " + b.Time.UTC().Format("2006-01-02")
	}
	if b.Modified {
		s += ", modified"
	}
	return s
}

// Full is "0.1.0-dev (commit 1a2b3c4d5e6f, 2026-12-01)".
func Full() string { return Version + " (" + Current().String() + ")" }
