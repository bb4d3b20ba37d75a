package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAtLoginRefusedToCodexTools (issue 23, item 6): st's rule lets st up
// out of Codex's sandbox, and st up --at-login writes a login service
// (a file outside the sandbox that starts a program at every login). From
// a command Codex runs for its model it is refused before anything is
// written or started; st down --at-login likewise.
func TestAtLoginRefusedToCodexTools(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{"HOME": home, "ST_HOME": filepath.Join(home, "st"), "XDG_CONFIG_HOME": filepath.Join(home, "cfg"),
		"PATH": "/usr/bin:/bin", "CODEX_THREAD_ID": "01a2", "CODEX_TOOL_CALL_ID": "call_1"}
	for _, args := range [][]string{{"up", "--at-login"}, {"up", "--at-login=true"}, {"down", "--at-login"}} {
		code, out, errs := runST(t, vars, args...)
		if code != 1 || !strings.Contains(errs, "refused: st "+args[0]+" --at-login changes the login service, which is a person's to do") {
			t.Errorf("st %v from Codex's tool: exit %d\n%s%s", args, code, out, errs)
		}
	}
	for _, p := range []string{filepath.Join(home, "st"), filepath.Join(home, "cfg")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused st up --at-login made %s", p)
		}
	}
}
