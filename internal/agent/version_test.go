package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCompareVersions(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"2.1.300", "2.1.300", 0},
		{"2.1.300", "2.1.332", -1},
		{"2.1.1000", "2.1.332", 1}, // numbers, not text
		{"2.2.0", "2.1.999", 1},
		{"0.171.0", "0.150.0", 1},
		{"0.172.0-alpha.1", "0.172.0", -1},
		{"0.172.0-alpha.1", "0.171.0", 1},
		{"0.172.0-alpha.1", "0.172.0-alpha.2", -1},
		// Pre-release parts that are numbers compare as numbers (issue
		// 31, item 7: as text, "beta.10" came before "beta.9").
		{"2.2.0-beta.9", "2.2.0-beta.10", -1},
		{"0.172.0-alpha.99", "0.172.0-alpha.100", -1},
		{"1.0.0-2", "1.0.0-10", -1},
		{"1.0.0-10", "1.0.0-alpha", -1}, // a number before a word
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.beta", "1.0.0-beta", -1},
		{"2.1.332-rc.1", "2.1.332-rc.1", 0},
		{"codex-cli 0.171.0", "0.171.0", 0},
		{"", "0.0.1", -1},
	}
	for _, c := range cases {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := compareVersions(c.b, c.a); got != -c.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

// fakeProgram writes an executable script into dir that prints out for
// --version and help for --help, and counts its runs in dir/runs.
func fakeProgram(t *testing.T, dir, name, out, help string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	script := "#!/bin/sh\necho run >> " + filepath.Join(dir, "runs") + "\n" +
		"case \"$1\" in --version) printf '%s\\n' \"" + out + "\" ;; --help) printf '%s\\n' \"" + help + "\" ;; *) exit 3 ;; esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runs(t *testing.T, dir string) int {
	data, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Count(string(data), "run")
}

func TestCheckVerdicts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		kind, out string
		want      Support
		note      []string
	}{
		{"claude", "2.1.332 (Claude Code)", Tested, nil},
		{"claude", "2.1.200 (Claude Code)", Tested, nil},
		{"claude", "2.1.400 (Claude Code)", Newer, []string{"claude 2.1.400 is newer than st was tested on (2.1.100 to 2.1.332)", "Try: npm install -g @anthropic-ai/claude-code@2.1.332"}},
		{"claude", "2.0.5 (Claude Code)", Older, []string{"claude 2.0.5 is older than st was tested on (2.1.100 to 2.1.332)"}},
		{"codex", "WARNING: proceeding, even though we could not create PATH aliases\ncodex-cli 0.171.0", Tested, nil},
		{"codex", "codex-cli 0.180.0", Newer, []string{"codex 0.180.0 is newer than st was tested on (0.130.0 to 0.171.0)"}},
		// Gemini's tested range starts at 0.59.0, the older release of
		// scripts/compat --gemini, whose screens are fixtures.
		{"gemini", "0.59.0", Tested, nil},
		{"gemini", "0.61.0", Tested, nil},
		{"gemini", "0.55.1", Older, []string{"gemini 0.55.1 is older than st was tested on (0.59.0 to 0.61.0)", "Try: npm install -g @google/gemini-cli@0.61.0"}},
		{"codex", "codex-cli", Unknown, []string{`could not tell which version of codex`, `it printed "codex-cli"`, "goes on"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		p := fakeProgram(t, dir, c.kind, c.out, "--no-daemon")
		v := Check(ctx, c.kind, p, "")
		if v.Support != c.want || v.Refused() {
			t.Errorf("%s %q: %v (refused %v), want %v", c.kind, c.out, v.Support, v.Refused(), c.want)
		}
		line := v.Line()
		if len(c.note) == 0 && line != "" {
			t.Errorf("%s %q: a tested version got a note: %s", c.kind, c.out, line)
		}
		for _, n := range c.note {
			if !strings.Contains(line, n) {
				t.Errorf("%s %q: note %q lacks %q", c.kind, c.out, line, n)
			}
		}
	}
	if v := Check(ctx, "sim", "", ""); v.Support != Tested || v.Line() != "" {
		t.Errorf("sim: %+v", v)
	}
}

func TestCheckMissing(t *testing.T) {
	dir := t.TempDir()
	v := Check(context.Background(), "codex", "", dir) // an empty PATH folder
	if !v.Refused() || v.Support != Missing || !strings.Contains(v.Line(), "codex is not on the PATH") ||
		!strings.Contains(v.Line(), "Try: install it (npm install -g @openai/codex@0.171.0) or set ST_CODEX_BIN") {
		t.Errorf("no codex: %+v %q", v, v.Line())
	}
	v = Check(context.Background(), "claude", filepath.Join(dir, "nope"), "")
	if v.Support != Missing || !strings.Contains(v.Note, "nope") {
		t.Errorf("a claude path that is not there: %+v", v)
	}
}

// TestCheckTooOld: a Codex with no hooks (before 0.130) is refused,
// saying why and the oldest version that works; one whose feature list
// cannot be read is not.
func TestCheckTooOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "codex")
	script := `#!/bin/sh
case "$1" in
--version) echo "codex-cli 0.120.0" ;;
--help) echo "  --no-alt-screen" ;;
features) printf 'apps                stable             true\ncodex_hooks         under development  false\n' ;;
esac
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	v := Check(context.Background(), "codex", p, "")
	if !v.Refused() || v.Support != TooOld ||
		v.Line() != `codex 0.120.0 is too old for st: it has no hooks (codex features list shows no "hooks"), and st learns what a worker does from them; the oldest version that works is 0.130.0. Try: npm install -g @openai/codex@0.171.0` {
		t.Errorf("%+v %q", v, v.Line())
	}
	// fakeProgram's codex answers nothing to features list.
	q := fakeProgram(t, t.TempDir(), "codex", "codex-cli 0.125.0", "")
	if v := Check(context.Background(), "codex", q, ""); v.Refused() || v.Support != Older {
		t.Errorf("a features list that says nothing: %+v", v)
	}
}

// TestProbeOnce: the program runs once per version of its file, found on
// the PATH given; a new file in its place is asked again.
func TestProbeOnce(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, dir, "codex", "codex-cli 0.165.0", "  --no-daemon   run in process")
	for i := 0; i < 3; i++ {
		if v := Check(context.Background(), "codex", "", dir); v.Version != "0.165.0" || v.Support != Tested {
			t.Fatalf("%+v", v)
		}
	}
	if n := runs(t, dir); n != 3 { // --version, --help, features list
		t.Errorf("the program ran %d times for three checks, want 3", n)
	}
	// An upgrade in place: another file at the same path.
	time.Sleep(10 * time.Millisecond)
	fakeProgram(t, dir, "codex", "codex-cli 0.181.0", "")
	if v := Check(context.Background(), "codex", "", dir); v.Version != "0.181.0" || v.Support != Newer {
		t.Errorf("after the upgrade: %+v", v)
	}
}

// TestCodexCommandNoDaemon: st passes --no-daemon only to a Codex that has
// it (0.150.0 refuses to start with it), and to one it cannot ask.
func TestCodexCommandNoDaemon(t *testing.T) {
	dir := t.TempDir()
	old := fakeProgram(t, dir, "codex-old", "codex-cli 0.150.0", "      --no-alt-screen")
	nu := fakeProgram(t, dir, "codex-new", "codex-cli 0.171.0", "      --no-alt-screen\n      --no-daemon")
	a, _ := Lookup("codex")
	cases := []struct {
		o    LaunchOptions
		want string
	}{
		{LaunchOptions{Program: old}, old},
		{LaunchOptions{Program: old, ResumeSession: testSession}, old + " resume -- " + testSession},
		{LaunchOptions{Program: nu}, nu + " --no-daemon"},
		{LaunchOptions{Program: nu, ResumeSession: testSession, NetworkAccess: true}, nu + " resume --no-daemon -c sandbox_workspace_write.network_access=true -- " + testSession},
		{LaunchOptions{Program: "codex-new", Path: dir}, "codex-new --no-daemon"},
		{LaunchOptions{Program: "codex-old", Path: dir}, "codex-old"},
		{LaunchOptions{Program: filepath.Join(dir, "absent")}, filepath.Join(dir, "absent") + " --no-daemon"},
	}
	for _, c := range cases {
		if got := strings.Join(a.Command(c.o), " "); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
	if v := Check(context.Background(), "codex", old, ""); len(v.Workarounds) != 1 || !strings.Contains(v.Workarounds[0], "no --no-daemon") {
		t.Errorf("the verdict does not name the workaround: %+v", v)
	}
}

// TestCheckAgents: what st doctor gets, one verdict per agent with a
// tested range, from the environment it is given.
func TestCheckAgents(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, dir, "claude", "2.1.300 (Claude Code)", "")
	env := map[string]string{"PATH": dir}
	vs := CheckAgents(context.Background(), func(k string) string { return env[k] })
	if len(vs) != 4 || vs[0].Kind != "claude" || vs[0].Support != Tested || vs[0].Version != "2.1.300" ||
		vs[1].Kind != "codex" || vs[1].Support != Missing || vs[2].Kind != "gemini" || vs[2].Support != Missing || vs[3].Kind != "opencode" || vs[3].Support != Missing {
		t.Fatalf("%+v", vs)
	}
	env["ST_CODEX_BIN"] = fakeProgram(t, dir, "my-codex", "codex-cli 0.172.0", "--no-daemon")
	vs = CheckAgents(context.Background(), func(k string) string { return env[k] })
	if vs[1].Support != Newer || vs[1].Program != env["ST_CODEX_BIN"] {
		t.Fatalf("%+v", vs[1])
	}
}
