package hooks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/cli"
	"github.com/sophonz/st/internal/hooks"
)

// st runs the st command line in a private HOME, with no codex on PATH.
func st(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	env := map[string]string{"HOME": home, "PATH": "", "ST_HOME": filepath.Join(home, ".sophonz")}
	var out, errb bytes.Buffer
	code = cli.Main(args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return out.String(), errb.String(), code
}

func TestCLIHooks(t *testing.T) {
	home := t.TempDir()
	out, errOut, code := st(t, home, "hooks", "install")
	t.Logf("st hooks install:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "claude: installed (13/13) in "+filepath.Join(home, ".claude", "settings.json")) ||
		!strings.Contains(out, "codex: installed (10/10)") || !strings.Contains(out, "codex trust: not written: codex not found") ||
		!strings.Contains(out, "Try: Codex skips hooks until they are trusted: install Codex") {
		t.Fatalf("install: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = st(t, home, "hooks", "install")
	if code != 0 || strings.Count(out, "(unchanged)") != 2 {
		t.Errorf("second install:\n%s", out)
	}

	// Take two of st's hooks out by hand: status names them, exit 0.
	settings := filepath.Join(home, ".claude", "settings.json")
	var v map[string]any
	b, _ := os.ReadFile(settings)
	json.Unmarshal(b, &v)
	h := v["hooks"].(map[string]any)
	delete(h, "Stop")
	delete(h, "StopFailure")
	b, _ = json.Marshal(v)
	os.WriteFile(settings, b, 0o600)
	out, errOut, code = st(t, home, "hooks", "status")
	t.Logf("st hooks status:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "claude: missing: Stop, StopFailure (11/13 installed)") || !strings.Contains(out, "Try: st hooks install") {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	out, _, code = st(t, home, "hooks", "status", "--json")
	var r hooks.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || len(r.Agents) != 2 || r.Agents[0].Installed != len(hooks.ClaudeEvents)-2 {
		t.Errorf("status --json: exit %d, %v\n%s", code, err, out)
	}

	// A broken settings.json: install fails for Claude, says where and why.
	os.WriteFile(settings, []byte("{\"hooks\": "), 0o600)
	out, errOut, code = st(t, home, "hooks", "install", "--agent", "claude")
	if code != 1 || !strings.Contains(errOut, settings) || !strings.Contains(errOut, "invalid JSON") || !strings.Contains(errOut, "Try:") {
		t.Errorf("broken file: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{\"hooks\": " {
		t.Errorf("broken file changed: %q", b)
	}

	out, errOut, code = st(t, home, "hooks", "uninstall", "--agent", "codex")
	if code != 0 || !strings.Contains(out, "codex: removed st's hooks from") {
		t.Errorf("uninstall: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = st(t, home, "hooks", "install", "--agent", "aider"); code != 1 || !strings.Contains(errOut, "unknown agent") {
		t.Errorf("--agent aider: exit %d %s", code, errOut)
	}
}
