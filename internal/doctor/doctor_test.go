package doctor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/controlplane"
	_ "github.com/sophonz/st/internal/controlplane/cpserver" // the SQLite driver, as st-control-plane links it
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/plugin"
	"github.com/sophonz/st/internal/remote"
)

// fakeDaemon answers as st's daemon would.
type fakeDaemon struct {
	status    *api.StatusInfo
	statusErr error
	web       string
	webErr    error
	accept    api.AcceptRemoteStatus
}

func (d *fakeDaemon) Status(context.Context) (*api.StatusInfo, error) { return d.status, d.statusErr }
func (d *fakeDaemon) Web(context.Context) (api.WebURL, error) {
	return api.WebURL{URL: d.web}, d.webErr
}
func (d *fakeDaemon) AcceptRemote(context.Context, api.AcceptRemoteRequest) (*api.AcceptRemoteStatus, error) {
	return &d.accept, nil
}

// want fails unless c is as right as ok says and its detail and Try hold
// the texts given.
func want(t *testing.T, c Check, ok bool, detail, try string) {
	t.Helper()
	if c.OK != ok || !strings.Contains(c.Detail, detail) || !strings.Contains(c.Try, try) || (!ok && c.Try == "") {
		t.Errorf("%s: got ok=%v detail=%q try=%q; want ok=%v, detail with %q, try with %q", c.Name, c.OK, c.Detail, c.Try, ok, detail, try)
	}
}

func writeExec(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestTmux(t *testing.T) {
	want(t, Tmux(t.Context(), os.Getenv("PATH")), true, "tmux 3.", "")
	want(t, Tmux(t.Context(), t.TempDir()), false, "tmux is not installed", "apt-get install tmux")
	old := t.TempDir()
	writeExec(t, filepath.Join(old, "tmux"), "#!/bin/sh\necho 'tmux 2.9a'\n")
	want(t, Tmux(t.Context(), old), false, "tmux 2.9a at "+old+"/tmux is older than st needs (3.2 or newer)", "tmux 3.2 or newer")
}

func TestRunning(t *testing.T) {
	home := t.TempDir()
	s, c := Running(t.Context(), &fakeDaemon{statusErr: &client.DownError{Socket: "x", Cause: errors.New("refused")}}, home)
	if s != nil {
		t.Errorf("status %+v from a daemon that is down", s)
	}
	want(t, c, false, "not running (nothing answers on "+api.SocketPath(home)+")", "st up")
	_, c = Running(t.Context(), &fakeDaemon{statusErr: errors.New("read: connection reset\nTry: x")}, home)
	want(t, c, false, "does not answer: read: connection reset", "st down; st up")
	if c.Detail != "st's daemon does not answer: read: connection reset" {
		t.Errorf("detail %q keeps more than the error's first line", c.Detail)
	}
	s, c = Running(t.Context(), &fakeDaemon{status: &api.StatusInfo{PID: 42, Version: "1.2.3", Socket: "/s"}}, home)
	want(t, c, true, "running (pid 42, st 1.2.3), answering on /s", "")
	if s == nil || s.PID != 42 {
		t.Errorf("status = %+v", s)
	}
}

func TestAgents(t *testing.T) {
	rng := agent.TestedRange()
	missing := func(k string) agent.Verdict { return agent.Verdict{Kind: k, Support: agent.Missing, Tested: rng[k]} }
	cs := Agents([]agent.Verdict{missing("claude"), missing("codex")})
	want(t, cs[0], false, "claude is not installed, nor is any other agent st starts", "npm install -g @anthropic-ai/claude-code@"+rng["claude"].Newest)
	want(t, cs[1], false, "codex is not installed", "npm install -g @openai/codex@")

	tested := agent.Verdict{Kind: "claude", Support: agent.Tested, Version: rng["claude"].Newest, Program: "/bin/claude", Tested: rng["claude"]}
	cs = Agents([]agent.Verdict{tested, missing("codex")})
	want(t, cs[0], true, "claude "+rng["claude"].Newest+" at /bin/claude: st was tested on it", "")
	want(t, cs[1], true, "codex is not installed; st starts no codex workers here", "")

	newer := agent.Verdict{Kind: "codex", Support: agent.Newer, Program: "/bin/codex", Note: "codex 9.0.0 is newer", Hint: "npm install -g @openai/codex@x", Tested: rng["codex"]}
	old := agent.Verdict{Kind: "codex", Support: agent.TooOld, Program: "/bin/codex", Note: "codex 0.120.0 is too old", Hint: "npm install -g @openai/codex@y", Tested: rng["codex"]}
	cs = Agents([]agent.Verdict{tested, newer})
	want(t, cs[1], true, "not tested: codex 9.0.0 is newer", "@openai/codex@x")
	cs = Agents([]agent.Verdict{tested, old})
	want(t, cs[1], false, "too old", "@openai/codex@y")

	// The real check, with a fake claude that answers --version.
	bin := t.TempDir()
	writeExec(t, filepath.Join(bin, "claude"), "#!/bin/sh\necho '"+rng["claude"].Newest+" (Claude Code)'\n")
	vs := agent.CheckAgents(t.Context(), func(k string) string { return map[string]string{"PATH": bin}[k] })
	if p := Present(vs); !p["claude"] || p["codex"] {
		t.Errorf("present = %v, want claude alone", p)
	}
	want(t, Agents(vs)[0], true, "st was tested on it", "")
}

// hooksOptions are st hooks' options for a private HOME and the st at st.
func hooksOptions(home, st string) hooks.Options {
	return hooks.Options{Home: home, St: st, Getenv: func(string) string { return "" }, Environ: []string{}}
}

func TestHooks(t *testing.T) {
	home := t.TempDir()
	st := "/usr/local/bin/st"
	o := hooksOptions(home, st)
	claudeOnly := map[string]bool{"claude": true}
	settings := filepath.Join(home, ".claude", "settings.json")

	cs := Hooks(t.Context(), o, claudeOnly)
	want(t, cs[0], false, "0/", "st hooks install")
	want(t, cs[1], true, "codex is not installed: not checked", "")

	if _, err := hooks.Install(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	want(t, Hooks(t.Context(), o, claudeOnly)[0], true, "in "+settings+", running "+st, "")

	// Hooks of another st (moved, or another user's copy).
	o2 := hooksOptions(home, "/opt/other/st")
	want(t, Hooks(t.Context(), o2, claudeOnly)[0], false, "some run another st ("+st+")", "st hooks install")

	// Removed by hand: a file with none of st's hooks.
	if err := os.WriteFile(settings, []byte(`{"model": "opus"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, Hooks(t.Context(), o, claudeOnly)[0], false, "missing for SessionStart", "st hooks install")

	// A file that does not parse: left as it is, and said so.
	os.WriteFile(settings, []byte(`{"hooks": `), 0o600)
	want(t, Hooks(t.Context(), o, claudeOnly)[0], false, settings, "fix the JSON of "+settings)
}

func pluginConfig(t *testing.T) plugin.Config {
	home := t.TempDir()
	return plugin.Config{STBin: "/usr/local/bin/st", Version: "0.3.1", Home: home, STHome: filepath.Join(home, ".sophonz"),
		CodexHome: filepath.Join(home, ".codex"), ClaudeConfigDir: filepath.Join(home, ".claude"), ClaudeMissing: "claude is not on PATH"}
}

func TestPlugin(t *testing.T) {
	c := pluginConfig(t)
	codexOnly := map[string]bool{"codex": true}
	cs := Plugin(t.Context(), c, codexOnly)
	if len(cs) != 5 {
		t.Fatalf("checks = %+v", cs)
	}
	want(t, cs[3], true, "gemini is not installed: not checked", "")
	want(t, cs[4], true, "opencode is not installed: not checked", "")
	want(t, cs[0], true, "claude is not installed: not checked", "")
	want(t, cs[1], false, "missing "+filepath.Join(c.CodexHome, "skills"), "st plugin install")
	want(t, cs[2], false, "missing "+c.CodexRule(), "st plugin install")

	c.Agents = []string{plugin.Codex}
	if _, err := plugin.Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	cs = Plugin(t.Context(), c, codexOnly)
	want(t, cs[1], true, "the skills $sophonz-orchestrate, $sophonz-worker: current", "")
	want(t, cs[2], true, c.CodexRule()+", which lets /usr/local/bin/st run outside Codex's sandbox", "")

	// The rule of another st: the skills are still right, the rule is not.
	moved := c
	moved.STBin = "/opt/st"
	if _, err := plugin.Install(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(c.CodexSkillsDir(), plugin.CodexWorker, "SKILL.md"), mustRead(t, c, plugin.CodexWorker), 0o644)
	os.WriteFile(filepath.Join(c.CodexSkillsDir(), plugin.CodexOrchestrate, "SKILL.md"), mustRead(t, c, plugin.CodexOrchestrate), 0o644)
	cs = Plugin(t.Context(), c, codexOnly)
	want(t, cs[1], true, "current", "")
	want(t, cs[2], false, "stale "+c.CodexRule(), "st plugin install")

	// Claude, present but its plugin's files only written: not registered.
	c.Agents = []string{plugin.Claude}
	plugin.Install(t.Context(), c)
	cs = Plugin(t.Context(), c, map[string]bool{"claude": true})
	want(t, cs[0], false, "the files are current, but claude is not on PATH", "st plugin install")

	// Gemini CLI, present: its commands missing, then installed, then a
	// command of another st.
	gemini := map[string]bool{"gemini": true}
	cs = Plugin(t.Context(), c, gemini)
	// On PATH but never run (no ~/.gemini): st plugin install would leave
	// it out, st setup puts it in.
	want(t, named(t, cs, "commands gemini"), false, "missing "+filepath.Join(c.GeminiCommandsDir(), "orchestrate.toml"), "st setup")
	c.Agents = []string{plugin.Gemini}
	if _, err := plugin.Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	cs = Plugin(t.Context(), c, gemini)
	want(t, named(t, cs, "commands gemini"), true, "the commands /sophonz:orchestrate, /sophonz:worker in "+c.GeminiCommandsDir()+": current for this st", "")
	moved.Agents = []string{plugin.Gemini}
	if _, err := plugin.Install(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	cs = Plugin(t.Context(), c, gemini)
	want(t, named(t, cs, "commands gemini"), false, "stale "+filepath.Join(c.GeminiCommandsDir(), "orchestrate.toml"), "st plugin install")
	if !strings.Contains(named(t, cs, "commands gemini").Detail, "written by st 0.3.1 at /opt/st") {
		t.Errorf("the stale commands' check does not say which st wrote them: %s", named(t, cs, "commands gemini").Detail)
	}
}

// opencode, present: on PATH but never run (no config folder), its
// commands are missing and st setup puts them in; installed, current;
// written by another st, stale, saying which.
func TestPluginOpencode(t *testing.T) {
	c := pluginConfig(t)
	c.OpencodeDir = filepath.Join(c.Home, ".config", "opencode")
	oc := map[string]bool{"opencode": true}
	want(t, named(t, Plugin(t.Context(), c, oc), "commands opencode"), false,
		"missing "+filepath.Join(c.OpencodeCommandsDir(), "sophonz-orchestrate.md"), "st setup")
	c.Agents = []string{plugin.Opencode}
	if _, err := plugin.Install(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	want(t, named(t, Plugin(t.Context(), c, oc), "commands opencode"), true,
		"the commands /sophonz-orchestrate, /sophonz-worker in "+c.OpencodeCommandsDir()+": current for this st", "")
	moved := c
	moved.STBin = "/opt/st"
	if _, err := plugin.Install(t.Context(), moved); err != nil {
		t.Fatal(err)
	}
	got := named(t, Plugin(t.Context(), c, oc), "commands opencode")
	want(t, got, false, "stale "+filepath.Join(c.OpencodeCommandsDir(), "sophonz-orchestrate.md"), "st plugin install")
	if !strings.Contains(got.Detail, "written by st 0.3.1 at /opt/st") {
		t.Errorf("the stale commands' check does not say which st wrote them: %s", got.Detail)
	}
}

// named is the check called name.
func named(t *testing.T, cs []Check, name string) Check {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, cs)
	return Check{}
}

// mustRead is the skill name's SKILL.md as c renders it.
func mustRead(t *testing.T, c plugin.Config, name string) []byte {
	t.Helper()
	files, err := plugin.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == filepath.Join(c.CodexSkillsDir(), name, "SKILL.md") {
			return f.Data
		}
	}
	t.Fatalf("no SKILL.md for %s", name)
	return nil
}

func TestWeb(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "sekrit" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		io.WriteString(w, "<html>st</html>")
	}))
	defer srv.Close()
	up := &api.StatusInfo{Web: srv.URL}
	d := &fakeDaemon{web: srv.URL + "/ui/?token=sekrit"}
	c := Web(t.Context(), d, up, nil)
	want(t, c, true, "serving at "+srv.URL, "")
	if strings.Contains(c.Detail, "sekrit") {
		t.Errorf("the detail shows the token: %q", c.Detail)
	}
	d.web = srv.URL + "/ui/?token=wrong"
	want(t, Web(t.Context(), d, up, nil), false, "answers 403 Forbidden", "st down; st up")
	d.webErr = &api.Error{Kind: api.KindInternal, Message: "st's web UI is not running (its port was taken; see the daemon log)", Hint: "x"}
	want(t, Web(t.Context(), d, up, nil), false, "its port was taken", "ST_WEB_PORT=auto st up")
	want(t, Web(t.Context(), d, nil, nil), true, "not checked: the daemon is not running", "")

	// Nothing listens where the daemon says.
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.URL
	gone.Close()
	d = &fakeDaemon{web: addr + "/ui/?token=x"}
	want(t, Web(t.Context(), d, &api.StatusInfo{Web: addr}, nil), false, "nothing serves the web UI at "+addr, "st down; st up")
}

func TestAcceptRemote(t *testing.T) {
	d := &fakeDaemon{}
	up := &api.StatusInfo{}
	want(t, AcceptRemote(t.Context(), d, up), true, "off: this machine takes no workers", "")
	d.accept = api.AcceptRemoteStatus{On: true}
	want(t, AcceptRemote(t.Context(), d, up), false, "on, but this machine is not signed in", "st login --control-plane URL")
	d.accept = api.AcceptRemoteStatus{On: true, SignedIn: true, Machine: "mac", Account: "acme", Addr: "10.0.0.2:7443"}
	want(t, AcceptRemote(t.Context(), d, up), true, "on: machine mac of account acme takes workers from the account's other machines on 10.0.0.2:7443", "")
	want(t, AcceptRemote(t.Context(), d, nil), true, "not checked", "")
}

// A push without push_answer_url has no buttons: doctor notes it, and
// its Try: line names the setting and the file (issue 32, item 8).
func TestPush(t *testing.T) {
	want(t, Push(nil, "/h"), true, "not checked", "")
	want(t, Push(&api.StatusInfo{}, "/h"), true, "off: open gates wait", "")
	noButtons := Push(&api.StatusInfo{Push: true, Web: "http://127.0.0.1:7766"}, "/h")
	want(t, noButtons, true, "on, without buttons", `push_answer_url = "https://NAME" in /h/config.toml`)
	if !strings.Contains(noButtons.Try, "http://127.0.0.1:7766") {
		t.Errorf("the Try: line does not name the web UI's address: %q", noButtons.Try)
	}
	buttons := Push(&api.StatusInfo{Push: true, PushButtons: true}, "/h")
	want(t, buttons, true, "with a button per option", "")
	if buttons.Try != "" {
		t.Errorf("a push with buttons has a Try: line: %q", buttons.Try)
	}
}

// A real sign-in with a control plane on 127.0.0.1: valid now, expired
// twelve hours on, broken when its certificate is not the machine's.
func TestSignIn(t *testing.T) {
	home := t.TempDir()
	want(t, SignIn(home, time.Now()), true, "not signed in: workers run on this machine only", "")

	data := t.TempDir()
	cp, err := controlplane.StartControlPlane(cpconfig.ServerOptions{Data: data}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Shutdown(context.Background())
	key, err := controlplane.AddAccount(data, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Login(t.Context(), home, remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "acme", Key: key, Name: "laptop", Host: "laptop.local"}); err != nil {
		t.Fatal(err)
	}
	want(t, SignIn(home, time.Now()), true, "machine laptop (laptop) of account acme at "+cp.URL()+"; certificate valid until", "")
	want(t, SignIn(home, time.Now().Add(12*time.Hour)), false, "the machine's certificate expired at", "st login --control-plane "+cp.URL()+" --account acme --key KEY")

	// A certificate from another account's CA, with this machine's key.
	other := t.TempDir()
	key2, _ := controlplane.AddAccount(data, "other")
	if _, err := remote.Login(t.Context(), other, remote.LoginOptions{URL: cp.URL(), CAFile: cp.CAFile(), Account: "other", Key: key2, Name: "x", Host: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"machine.crt", "machine.key"} {
		b, _ := os.ReadFile(filepath.Join(other, f))
		os.WriteFile(filepath.Join(home, f), b, 0o600)
	}
	want(t, SignIn(home, time.Now()), false, "the machine's certificate is not valid", "st login")
}
