package hooks

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

// The test binary doubles as a fake `codex app-server` (ST_FAKE_CODEX set):
// it answers hooks/list from $CODEX_HOME/hooks.json and config.toml the
// way Codex 0.171 does, with a hash of its own making.
func TestMain(m *testing.M) {
	if mode := os.Getenv("ST_FAKE_CODEX"); mode != "" && len(os.Args) > 1 && os.Args[1] == "app-server" {
		fakeCodex(mode)
		os.Exit(0)
	}
	// No goroutine of a codex run (reader, waiter) outlives the tests.
	goleak.VerifyTestMain(m)
}

func fakeCodex(mode string) {
	if f := os.Getenv("ST_FAKE_CODEX_PIDFILE"); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	switch mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "fake codex: cannot start")
		os.Exit(3)
	case "hang":
		// Answers nothing and ignores the end of its input and SIGTERM.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		time.Sleep(time.Hour)
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	reply := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	for sc.Scan() {
		var m struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintln(out, "not json: a log line")
			reply(map[string]any{"method": "configWarning", "params": map[string]any{"summary": "x"}})
			reply(map[string]any{"id": *m.ID, "result": map[string]any{"codexHome": os.Getenv("CODEX_HOME")}})
		case "hooks/list":
			reply(map[string]any{"id": *m.ID, "result": map[string]any{"data": []any{fakeList()}}})
		}
	}
}

func fakeList() map[string]any {
	home, _ := filepath.EvalSymlinks(os.Getenv("CODEX_HOME"))
	src := filepath.Join(home, "hooks.json")
	data, _ := os.ReadFile(src)
	cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	state, _ := readTrust(cfg)
	var hooks []map[string]any
	gjson.GetBytes(data, "hooks").ForEach(func(ev, groups gjson.Result) bool {
		if os.Getenv("ST_FAKE_CODEX") == "0.140" && (ev.String() == "Interrupt" || ev.String() == "SessionEnd") ||
			ev.String() == os.Getenv("ST_FAKE_CODEX_DROP") {
			return true // events Codex 0.140.0 does not have, or one a test drops
		}
		groups.ForEach(func(gi, g gjson.Result) bool {
			g.Get("hooks").ForEach(func(hi, h gjson.Result) bool {
				key := fmt.Sprintf("%s:%s:%d:%d", src, snake(ev.String()), gi.Int(), hi.Int())
				sum := sha256.Sum256([]byte(ev.String() + "\x00" + g.Get("matcher").String() + "\x00" + h.Get("command").String()))
				hash := "sha256:" + hex.EncodeToString(sum[:])
				status := "untrusted"
				if t, ok := state[key]; ok {
					status = "modified"
					if t == hash {
						status = "trusted"
					}
				}
				name := ev.String()
				hooks = append(hooks, map[string]any{
					"key": key, "eventName": strings.ToLower(name[:1]) + name[1:], "handlerType": "command",
					"command": h.Get("command").String(), "sourcePath": src, "source": "user", "enabled": true,
					"currentHash": hash, "trustStatus": status, "timeoutSec": 600,
				})
				return true
			})
			return true
		})
		return true
	})
	return map[string]any{"cwd": "/", "hooks": hooks, "warnings": []any{}, "errors": []any{}}
}

// testEnv is a private HOME with Claude and Codex folders, and Options
// that use it and the fake codex.
type testEnv struct {
	home, claude, codex string
	opts                Options
}

func newEnv(t *testing.T, codexMode string) *testEnv {
	t.Helper()
	home := t.TempDir()
	e := &testEnv{home: home, claude: filepath.Join(home, ".claude"), codex: filepath.Join(home, ".codex")}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "", "HOME": home}
	e.opts = Options{
		Home:    home,
		St:      testST,
		Getenv:  func(k string) string { return env[k] },
		Environ: []string{"PATH=/usr/bin:/bin", "ST_FAKE_CODEX=" + codexMode},
	}
	if codexMode != "" {
		e.opts.CodexBin = self
	}
	return e
}

func (e *testEnv) write(t *testing.T, rel, data string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(e.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func agentReport(t *testing.T, r *Report, name string) AgentReport {
	t.Helper()
	for _, a := range r.Agents {
		if a.Agent == name {
			return a
		}
	}
	t.Fatalf("no report for %s in %+v", name, r)
	return AgentReport{}
}

func TestInstallClaudeKeepsUserSettings(t *testing.T) {
	e := newEnv(t, "")
	e.opts.Agents = []string{Claude}
	settings := e.write(t, ".claude/settings.json", userSettings, 0o640)
	ctx := context.Background()

	r, err := Install(ctx, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	a := agentReport(t, r, Claude)
	if a.Error != "" || !a.Changed || a.Installed != len(ClaudeEvents) || a.Total != len(ClaudeEvents) || a.Backup != settings+BackupSuffix {
		t.Fatalf("first install: %+v", a)
	}
	first := read(t, settings)
	if read(t, settings+BackupSuffix) != userSettings {
		t.Error("the backup is not the original")
	}
	if fi, _ := os.Stat(settings); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}

	// Twice: nothing changes, no second backup.
	os.WriteFile(settings+BackupSuffix, []byte("marker"), 0o600)
	r, err = Install(ctx, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if a := agentReport(t, r, Claude); a.Changed || a.Backup != "" || a.Installed != len(ClaudeEvents) {
		t.Errorf("second install: %+v", a)
	}
	if read(t, settings) != first {
		t.Error("second install changed the file")
	}

	// A new st path replaces the old one in place; the backup stays.
	e.opts.St = "/usr/local/bin/st"
	r, _ = Install(ctx, e.opts)
	if a := agentReport(t, r, Claude); !a.Changed || a.Backup != "" || a.Installed != len(ClaudeEvents) {
		t.Errorf("install with another st: %+v", a)
	}
	moved := read(t, settings)
	if strings.Contains(moved, testST) || strings.Count(moved, "/usr/local/bin/st hook claude ") != len(ClaudeEvents) {
		t.Errorf("old st left or new st not once per event:\n%s", moved)
	}
	if read(t, settings+BackupSuffix) != "marker" {
		t.Error("an existing backup was overwritten")
	}

	// Status with the first st sees hooks of another st.
	e.opts.St = testST
	r, _ = Status(ctx, e.opts)
	if a := agentReport(t, r, Claude); a.Installed != 0 || len(a.Other) != len(ClaudeEvents) || a.Changed {
		t.Errorf("status with another st: %+v", a)
	}

	// Uninstall gives the user's file back.
	e.opts.St = "/usr/local/bin/st"
	r, _ = Uninstall(ctx, e.opts)
	if a := agentReport(t, r, Claude); !a.Changed || a.Installed != 0 || len(a.Other) != 0 {
		t.Errorf("uninstall: %+v", a)
	}
	if got := read(t, settings); got != userSettings {
		t.Errorf("uninstall left:\n%s\nwant:\n%s", got, userSettings)
	}
}

func TestInstallCreatesFiles(t *testing.T) {
	e := newEnv(t, "")
	r, err := Install(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{Claude, Codex} {
		a := agentReport(t, r, name)
		if a.Error != "" || !a.Changed || a.Installed != a.Total {
			t.Errorf("%s: %+v", name, a)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(read(t, a.File)), &v); err != nil {
			t.Errorf("%s: %v", a.File, err)
		}
		// No original: st marks that, and makes no backup.
		if got, err := os.ReadFile(a.File + AbsentSuffix); err != nil || len(got) != 0 {
			t.Errorf("%s: the mark of no file: %q %v", name, got, err)
		}
		if _, err := os.Stat(a.File + BackupSuffix); err == nil {
			t.Errorf("%s: a backup of a file that was not there", name)
		}
	}
	tr := agentReport(t, r, Codex).Trust
	if tr == nil || !tr.NoCodex || tr.Known || !strings.Contains(tr.Error, "codex not found") || !strings.Contains(tr.Hint, "then run st hooks install again") {
		t.Errorf("trust without codex: %+v", tr)
	}
	if len(r.Problems()) != 0 {
		t.Errorf("a missing codex is not a failure: %v", r.Problems())
	}
	if _, err := os.Stat(filepath.Join(e.codex, "config.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config.toml written without hashes: %v", err)
	}
}

func TestMalformedLeftAsItWas(t *testing.T) {
	for n, bad := range []string{
		"{\n  \"model\": \"opus\",\n  \"hooks\": {\n}",
		`{"hooks": [1, 2]}`,
		`{"hooks": {"Stop": {"hooks": []}}}`,
		`"just a string"`,
	} {
		mode := ""
		if n == 0 {
			mode = "ok" // once with a codex, to see its trust written too
		}
		e := newEnv(t, mode)
		settings := e.write(t, ".claude/settings.json", bad, 0o600)
		for i, op := range []func(context.Context, Options) (*Report, error){Install, Status, Uninstall} {
			r, err := op(context.Background(), e.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Codex is done all the same.
			if c := agentReport(t, r, Codex); i < 2 && (c.Installed != c.Total || (mode != "" && c.Trust.Trusted != c.Total)) {
				t.Errorf("codex not installed next to a broken Claude file: %+v %+v", c, c.Trust)
			}
			a := agentReport(t, r, Claude)
			if !strings.Contains(a.Error, settings) || !strings.Contains(a.Error, "left as it was") {
				t.Errorf("%q: error %q does not name the file", bad, a.Error)
			}
			if read(t, settings) != bad {
				t.Errorf("%q was changed", bad)
			}
		}
		if _, err := os.Stat(settings + BackupSuffix); err == nil {
			t.Errorf("%q: a backup was made though nothing changed", bad)
		}
	}
	e := newEnv(t, "")
	e.write(t, ".claude/settings.json", "{,}", 0o600)
	r, _ := Install(context.Background(), e.opts)
	if ps := r.Problems(); len(ps) != 1 || !strings.Contains(ps[0].Message, "invalid JSON at line 1, column 2") || !strings.Contains(ps[0].Hint, "fix the JSON of") {
		t.Errorf("problems = %q", ps)
	}
}

const codexUserHooks = `{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "notify-send done" }
        ]
      }
    ]
  }
}
`

func TestCodexTrustWithFakeCodex(t *testing.T) {
	e := newEnv(t, "ok")
	e.opts.Agents = []string{Codex}
	hooksJSON := e.write(t, ".codex/hooks.json", codexUserHooks, 0o644)
	config := e.write(t, ".codex/config.toml", userConfig, 0o600)
	ctx := context.Background()

	r, err := Install(ctx, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	a := agentReport(t, r, Codex)
	if a.Installed != 10 || a.Trust == nil || !a.Trust.Known || a.Trust.Trusted != 10 || !a.Trust.Changed || a.Trust.Error != "" {
		t.Fatalf("install: %+v trust %+v", a, a.Trust)
	}
	for _, h := range a.Hooks {
		if h.Trust != "trusted" || !strings.HasPrefix(h.Key, hooksJSON+":"+snake(h.Event)+":") {
			t.Errorf("%s: %+v", h.Event, h)
		}
	}
	cfg := read(t, config)
	if !strings.HasPrefix(cfg, userConfig) {
		t.Errorf("config.toml lost the user's text:\n%s", cfg)
	}
	if read(t, config+BackupSuffix) != userConfig {
		t.Error("config.toml backup is not the original")
	}
	// The user's Stop hook stays first; st's is group 1.
	if !strings.Contains(cfg, `[hooks.state."`+hooksJSON+`:stop:1:0"]`) {
		t.Errorf("no trust for st's Stop hook at group 1:\n%s", cfg)
	}

	// Again: nothing to write.
	r, _ = Install(ctx, e.opts)
	if a := agentReport(t, r, Codex); a.Changed || a.Trust.Changed || a.Trust.Trusted != 10 {
		t.Errorf("second install: %+v %+v", a, a.Trust)
	}

	// Status sees the trust; then a changed hook is reported "modified".
	r, _ = Status(ctx, e.opts)
	if a := agentReport(t, r, Codex); a.Trust.Trusted != 10 {
		t.Errorf("status: %+v", a.Trust)
	}
	stopKey := fmt.Sprintf("%q", hooksJSON+":stop:1:0")
	before := read(t, config)
	i := strings.Index(before, stopKey)
	j := i + strings.Index(before[i:], "sha256:") + len("sha256:")
	os.WriteFile(config, []byte(before[:j]+"0000"+before[j+4:]), 0o600)
	r, _ = Status(ctx, e.opts)
	a = agentReport(t, r, Codex)
	for _, h := range a.Hooks {
		if want := map[bool]string{true: "modified", false: "trusted"}[h.Event == "Stop"]; h.Trust != want {
			t.Errorf("%s: trust %q, want %q", h.Event, h.Trust, want)
		}
	}
	if a.Trust.Trusted != 9 {
		t.Errorf("trusted = %d, want 9", a.Trust.Trusted)
	}
	// Install mends it, touching only that value.
	r, _ = Install(ctx, e.opts)
	if a := agentReport(t, r, Codex); a.Trust.Trusted != 10 || !a.Trust.Changed {
		t.Errorf("reinstall: %+v", a.Trust)
	}
	if read(t, config) != before {
		t.Error("mending the hash changed more than the hash")
	}

	// Uninstall: st's groups and st's trust tables go; the user's stay.
	r, _ = Uninstall(ctx, e.opts)
	a = agentReport(t, r, Codex)
	if !a.Changed || !a.Trust.Changed {
		t.Errorf("uninstall: %+v %+v", a, a.Trust)
	}
	if got := read(t, config); got != userConfig {
		t.Errorf("config.toml after uninstall:\n%s", got)
	}
	var v any
	if err := json.Unmarshal([]byte(read(t, hooksJSON)), &v); err != nil {
		t.Fatal(err)
	}
	if got := gjson.Get(read(t, hooksJSON), "hooks.Stop.0.hooks.0.command").String(); got != "notify-send done" {
		t.Errorf("the user's Codex hook is gone: %q", got)
	}
}

// TestCodexWithoutSomeEvents: a Codex that has no Interrupt and SessionEnd
// hooks (0.140.0) does not list them; st hooks install trusts the others
// and says what st does without those two, instead of failing.
func TestCodexWithoutSomeEvents(t *testing.T) {
	e := newEnv(t, "0.140")
	e.opts.Agents = []string{Codex}
	r, err := Install(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	a := agentReport(t, r, Codex)
	if len(r.Problems()) != 0 || a.Trust.Trusted != 8 || a.Installed != 10 {
		t.Fatalf("problems %+v, trust %+v", r.Problems(), a.Trust)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "this codex has no hooks for Interrupt, SessionEnd") {
		t.Errorf("warnings: %q", a.Warnings)
	}
	// A hook of an event st needs that codex does not list still fails.
	e = newEnv(t, "0.140")
	e.opts.Agents = []string{Codex}
	e.write(t, ".codex/config.toml", "", 0o600)
	e.opts.Environ = append(e.opts.Environ, "ST_FAKE_CODEX_DROP=Stop")
	r, _ = Install(context.Background(), e.opts)
	if len(r.Problems()) != 1 || !strings.Contains(r.Problems()[0].Message, "not trusted") {
		t.Errorf("no Stop hook listed: problems %+v", r.Problems())
	}
}

func TestCodexTrustFollowsMovedHooks(t *testing.T) {
	// st's group came first and the user's after it: taking st's out
	// moves the user's hook from group 1 to 0, and its trust with it.
	e := newEnv(t, "")
	e.opts.Agents = []string{Codex}
	hooksJSON := filepath.Join(e.codex, "hooks.json")
	e.write(t, ".codex/hooks.json", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"`+testST+` hook codex Stop"}]},{"hooks":[{"type":"command","command":"mine"}]}]}}`, 0o600)
	config := e.write(t, ".codex/config.toml", fmt.Sprintf("[hooks.state.%q]\ntrusted_hash = \"st\"\n\n[hooks.state.%q]\ntrusted_hash = \"mine\"\n",
		hooksJSON+":stop:0:0", hooksJSON+":stop:1:0"), 0o600)
	if _, err := Uninstall(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("[hooks.state.%q]\ntrusted_hash = \"mine\"\n", hooksJSON+":stop:0:0")
	if got := read(t, config); got != want {
		t.Errorf("config.toml:\n%s\nwant:\n%s", got, want)
	}
}

func TestCodexFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("fails", func(t *testing.T) {
		e := newEnv(t, "fail")
		r, _ := Install(ctx, e.opts)
		a := agentReport(t, r, Codex)
		if a.Installed != 10 || a.Trust.NoCodex || !strings.Contains(a.Trust.Error, "fake codex: cannot start") {
			t.Errorf("%+v", a.Trust)
		}
		if len(r.Problems()) != 1 {
			t.Errorf("problems = %q", r.Problems())
		}
		r, _ = Status(ctx, e.opts)
		for _, h := range agentReport(t, r, Codex).Hooks {
			if h.Trust != "unknown" || h.Key == "" {
				t.Errorf("status without codex: %+v", h)
			}
		}
	})
	t.Run("ST_CODEX_BIN", func(t *testing.T) {
		e := newEnv(t, "")
		env := map[string]string{"ST_CODEX_BIN": filepath.Join(e.home, "nothing")}
		e.opts.Getenv = func(k string) string { return env[k] }
		r, _ := Install(ctx, e.opts)
		if tr := agentReport(t, r, Codex).Trust; tr.NoCodex || !strings.Contains(tr.Error, "ST_CODEX_BIN=") {
			t.Errorf("%+v", tr)
		}
	})
	t.Run("on PATH", func(t *testing.T) {
		e := newEnv(t, "ok")
		bin := filepath.Join(e.home, "bin")
		os.MkdirAll(bin, 0o755)
		if err := os.Symlink(e.opts.CodexBin, filepath.Join(bin, "codex")); err != nil {
			t.Fatal(err)
		}
		e.opts.CodexBin = ""
		env := map[string]string{"PATH": "/nonexistent:" + bin}
		e.opts.Getenv = func(k string) string { return env[k] }
		r, _ := Install(ctx, e.opts)
		if tr := agentReport(t, r, Codex).Trust; tr.Error != "" || tr.Trusted != 10 {
			t.Errorf("%+v", tr)
		}
	})
	t.Run("hangs", func(t *testing.T) {
		e := newEnv(t, "hang")
		pidfile := filepath.Join(e.home, "pid")
		e.opts.Environ = append(e.opts.Environ, "ST_FAKE_CODEX_PIDFILE="+pidfile)
		e.opts.CodexTimeout = 500 * time.Millisecond
		start := time.Now()
		r, _ := Install(ctx, e.opts)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		if tr := agentReport(t, r, Codex).Trust; !strings.Contains(tr.Error, "deadline") {
			t.Errorf("%+v", tr)
		}
		pid, err := strconv.Atoi(read(t, pidfile))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("codex app-server %d still runs (kill -0: %v)", pid, err)
		}
	})
}

func TestDisableAllHooksWarned(t *testing.T) {
	e := newEnv(t, "")
	e.opts.Agents = []string{Claude}
	e.write(t, ".claude/settings.json", `{"disableAllHooks": true}`, 0o600)
	r, _ := Install(context.Background(), e.opts)
	if a := agentReport(t, r, Claude); a.Installed != len(ClaudeEvents) || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "disableAllHooks") {
		t.Errorf("%+v", a)
	}
}

func TestSymlinkedSettingsStayLinks(t *testing.T) {
	e := newEnv(t, "")
	e.opts.Agents = []string{Claude}
	target := e.write(t, "dotfiles/claude-settings.json", `{"model":"opus"}`, 0o644)
	os.MkdirAll(e.claude, 0o755)
	link := filepath.Join(e.claude, "settings.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("settings.json is no longer a symlink")
	}
	if !strings.Contains(read(t, target), "hook claude Stop") {
		t.Errorf("the link's target was not edited")
	}
}
