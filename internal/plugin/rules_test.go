//go:build realclients

package plugin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil/realagent"
)

// The rule st writes is one the real Codex loads (its match and not_match
// examples are checked as it loads) and judges as st means: st's
// coordinating commands, run by st's absolute path (here with a space and
// a quote in it), are allowed; st's other commands, and st by another
// path, are not.
func TestCodexRuleWithRealCodex(t *testing.T) {
	t.Parallel()
	_, codex := realagent.Binaries(t)
	c := testConfig(t)
	c.STBin = `/opt/st "test"/bin/st`
	var rule string
	for p, data := range render(t, c) {
		if p == c.CodexRule() {
			rule = data
		}
	}
	if rule == "" {
		t.Fatalf("no rule rendered at %s", c.CodexRule())
	}
	path := filepath.Join(t.TempDir(), "sophonz.rules")
	if err := os.WriteFile(path, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for _, tc := range []struct {
		cmd   []string
		allow bool
		// decision, when not "allow" or none: what Codex does instead
		want string
	}{
		{[]string{c.STBin, "worker", "wait", "--timeout", "15m"}, true, ""},
		{[]string{c.STBin, "orch", "start", "--objective", "API tests"}, true, ""},
		{[]string{c.STBin, "worker", "start", "--agent", "codex", "--task", "/w/t.md", "--name", "api"}, true, ""},
		{[]string{c.STBin, "worker", "done", "--summary", "did it"}, true, ""},
		{[]string{c.STBin, "gate", "ask", "Ship?", "--option", "yes"}, true, ""},
		{[]string{c.STBin, "up"}, true, ""},
		// The web UI's token is a person's: st web stays in the sandbox
		// (which refuses st's socket), or asks a person.
		{[]string{c.STBin, "web"}, false, ""},
		// A login service is written outside the sandbox: a person says yes.
		{[]string{c.STBin, "up", "--at-login"}, false, "prompt"},
		// A variable set before st, as a forged $TMUX_PANE would be.
		{[]string{"env", "TMUX_PANE=%0", c.STBin, "worker", "send", "w1", "x"}, false, ""},
		{[]string{c.STBin, "hooks", "uninstall"}, false, ""},
		{[]string{c.STBin, "setup", "--undo"}, false, ""},
		{[]string{c.STBin, "down"}, false, ""},
		{[]string{c.STBin}, false, ""},
		{[]string{"st", "worker", "wait"}, false, ""},
		{[]string{"/usr/local/bin/st", "worker", "wait"}, false, ""},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, codex, append([]string{"execpolicy", "check", "--rules", path}, tc.cmd...)...)
		cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), "PATH=/usr/bin:/bin"}
		os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("codex execpolicy check %q: %v\n%s", tc.cmd, err, out)
		}
		var res struct{ Decision string }
		if err := json.Unmarshal(out[strings.IndexByte(string(out), '{'):], &res); err != nil {
			t.Fatalf("codex execpolicy check %q: %v\n%s", tc.cmd, err, out)
		}
		if got := res.Decision == "allow"; got != tc.allow {
			t.Errorf("%q: codex says %s, want allowed=%v", tc.cmd, out, tc.allow)
		}
		if tc.want != "" && res.Decision != tc.want {
			t.Errorf("%q: codex says %s, want %s", tc.cmd, out, tc.want)
		}
	}
}

// st plugin install and uninstall with the real claude leave the user's
// settings.json as it was, byte for byte, though claude rewrites it in
// its own layout while the plugin is in.
func TestPluginRoundTripKeepsSettings(t *testing.T) {
	t.Parallel()
	c := realConfig(t)
	settings := filepath.Join(c.ClaudeConfigDir, "settings.json")
	orig := "{\n\t\"model\": \"opus\",\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"]}\n}\n"
	os.MkdirAll(c.ClaudeConfigDir, 0o700)
	if err := os.WriteFile(settings, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(t.Context(), c); err != nil {
		t.Fatalf("install: %v", err)
	}
	if b, _ := os.ReadFile(settings); string(b) == orig {
		t.Fatalf("claude did not register the plugin in settings.json:\n%s", b)
	}
	rep, err := Uninstall(t.Context(), c)
	if err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if b, _ := os.ReadFile(settings); string(b) != orig {
		t.Errorf("settings.json after uninstall:\n%s\nwant, byte for byte:\n%s", b, orig)
	}
	if _, err := os.Stat(settings + ".st-backup"); !os.IsNotExist(err) {
		t.Errorf("the backup is still there: %v", err)
	}
	if n := strings.Join(rep.Agents[0].Notes, "\n"); !strings.Contains(n, "is as it was before st first changed it") {
		t.Errorf("notes: %s", n)
	}
}
