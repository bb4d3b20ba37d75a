package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/version"
)

// TestControlPlaneOfAnotherBuild: st-control-plane run by an st of
// another build (ST_CONTROL_PLANE_CALLER, which st sets as it runs it)
// says so on stderr, and still does its work; run by the same build, or
// by hand, it says nothing of it.
func TestControlPlaneOfAnotherBuild(t *testing.T) {
	for _, tc := range []struct {
		name, caller string
		warns        bool
	}{
		{"another build", "0.0.9 (commit 0123456789ab, 2026-01-01)", true},
		{"the same build", version.Full(), false},
		{"run by hand", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			data := filepath.Join(t.TempDir(), "cp")
			code := Main([]string{"control-plane", "account", "add", "acme", "--data", data}, Env{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv:       func(k string) string { return map[string]string{callerBuildVar: tc.caller}[k] },
				ControlPlane: controlplane.Service{},
			})
			if code != 0 || !strings.Contains(out.String(), "st login --control-plane") {
				t.Fatalf("account add: exit %d\n%s%s", code, &out, &errb)
			}
			warned := strings.Contains(errb.String(), "st "+tc.caller+" ran st-control-plane "+version.Full()+", another build") &&
				strings.Contains(errb.String(), "Try: install both from one checkout")
			if warned != tc.warns || (!tc.warns && errb.Len() > 0) {
				t.Errorf("stderr (a warning wanted: %v):\n%s", tc.warns, &errb)
			}
		})
	}
}
