package version

import (
	"runtime/debug"
	"testing"
)

func TestBuildString(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		built    string
		want     string
	}{
		{"go build in a checkout", []debug.BuildSetting{{Key: "vcs.revision", Value: "9b07790b7b3fa65e5e0e80dead15706c14e62824"},
			{Key: "vcs.time", Value: "2026-12-01T03:57:09Z"}, {Key: "vcs.modified", Value: "false"}}, "", "commit 9b07790b7b3f, 2026-12-01"},
		{"with changes", []debug.BuildSetting{{Key: "vcs.revision", Value: "9b07790b7b3fa65e"}, {Key: "vcs.modified", Value: "true"}}, "", "commit 9b07790b7b3f, modified"},
		{"Go's stamp wins", []debug.BuildSetting{{Key: "vcs.revision", Value: "aaaaaaaaaaaaaaaa"}}, "bbbbbbbbbbbb", "commit aaaaaaaaaaaa"},
		{"scripts/install in a worktree", nil, "bbbbbbbbbbbb-modified", "commit bbbbbbbbbbbb, modified"},
		{"go run", []debug.BuildSetting{{Key: "-compiler", Value: "gc"}}, "", "commit unknown: built without git's stamp (go run, a git worktree, or -buildvcs=false); scripts/install stamps it"},
	} {
		if got := fromSettings(tc.settings, tc.built).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
