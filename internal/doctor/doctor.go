// Package doctor is `st doctor`: it checks, one part at a time, what st
// needs on this machine (tmux, the daemon, the agents and their hooks,
// the plugin and skills, the web UI, the sign-in of the account's
// machines) and says for each problem the exact command that fixes it.
// It reads and asks; it changes nothing. st setup runs the same checks
// after each of its steps.
package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/plugin"
	"github.com/sophonz/st/internal/remote"
)

// Check is one line of st doctor: what was checked, whether it is right,
// what was found, and (when it is not right, or worth changing) the
// command to type.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Try    string `json:"try,omitempty"`
}

func ok(name, detail string) Check { return Check{Name: name, OK: true, Detail: detail} }

func bad(name, detail, try string) Check { return Check{Name: name, Detail: detail, Try: try} }

// Daemon is what doctor asks st's daemon; *client.Client is one.
type Daemon interface {
	Status(context.Context) (*api.StatusInfo, error)
	Web(context.Context) (api.WebURL, error)
	AcceptRemote(context.Context, api.AcceptRemoteRequest) (*api.AcceptRemoteStatus, error)
}

// Config is where the checks look.
type Config struct {
	// Home is ST_HOME.
	Home string
	// Getenv gives PATH, ST_CLAUDE_BIN and ST_CODEX_BIN.
	Getenv func(string) string
	Daemon Daemon
	// Hooks and Plugin are the options st hooks and st plugin use; their
	// St/STBin is this st, which every hook and text must name.
	Hooks  hooks.Options
	Plugin plugin.Config
	// Now is the clock the certificate is judged by (default time.Now).
	Now func() time.Time
	// HTTP fetches the web UI (default: a client with a short timeout).
	HTTP *http.Client
}

// Run makes every check, in the order st doctor prints them.
func Run(ctx context.Context, c Config) []Check {
	if c.Now == nil {
		c.Now = time.Now
	}
	out := []Check{Tmux(ctx, c.Getenv("PATH"))}
	status, daemon := Running(ctx, c.Daemon, c.Home)
	out = append(out, daemon)
	verdicts := agent.CheckAgents(ctx, c.Getenv)
	out = append(out, Agents(verdicts)...)
	out = append(out, Described(c.Home, c.Getenv)...)
	present := Present(verdicts)
	out = append(out, Hooks(ctx, c.Hooks, present)...)
	out = append(out, StatusLine(c.Hooks, present))
	out = append(out, Plugin(ctx, c.Plugin, present)...)
	out = append(out, Web(ctx, c.Daemon, status, c.HTTP))
	out = append(out, Push(status, c.Home))
	out = append(out, AcceptRemote(ctx, c.Daemon, status))
	out = append(out, SignIn(c.Home, c.Now()))
	return out
}

// Failed is how many checks are not right.
func Failed(cs []Check) int {
	n := 0
	for _, c := range cs {
		if !c.OK {
			n++
		}
	}
	return n
}

// Present is which agents are installed (found where a start would look).
func Present(vs []agent.Verdict) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v.Kind] = v.Support != agent.Missing
	}
	return m
}

// TmuxMinimum is the oldest tmux st can drive: new-session -e (the
// environment of the sessions st makes) came in 3.2. st is tested on 3.3a.
const TmuxMinimum = "3.2"

var tmuxVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`tmux (?:next-)?(\d+)\.(\d+)([a-z]?)`) })

// Tmux checks that tmux is on PATH and new enough.
func Tmux(ctx context.Context, path string) Check {
	const name = "tmux"
	bin, err := agent.LookProgram("tmux", "", path)
	if err != nil {
		return bad(name, "tmux is not installed (not on PATH)", "sudo apt-get install tmux (macOS: brew install tmux)")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-V").Output()
	if err != nil {
		return bad(name, fmt.Sprintf("%s -V failed: %v", bin, err), bin+" -V")
	}
	v := strings.TrimSpace(string(out))
	m := tmuxVersionRE().FindStringSubmatch(v)
	if m == nil {
		return ok(name, fmt.Sprintf("%s at %s (a version st cannot read; st was tested on tmux 3.3a)", v, bin))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 3 || major == 3 && minor < 2 {
		return bad(name, fmt.Sprintf("%s at %s is older than st needs (%s or newer)", v, bin, TmuxMinimum),
			"sudo apt-get install tmux (macOS: brew upgrade tmux), for tmux "+TmuxMinimum+" or newer")
	}
	return ok(name, fmt.Sprintf("%s at %s", v, bin))
}

// Running checks that st's daemon runs and answers; it returns what the
// daemon said, or nil when it did not answer.
func Running(ctx context.Context, d Daemon, home string) (*api.StatusInfo, Check) {
	const name = "daemon"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := d.Status(ctx)
	switch {
	case errors.Is(err, client.ErrDown):
		return nil, bad(name, "st's daemon is not running (nothing answers on "+api.SocketPath(home)+")", "st up")
	case err != nil:
		return nil, bad(name, "st's daemon does not answer: "+FirstLine(err.Error()), "st down; st up")
	}
	return s, ok(name, fmt.Sprintf("running (pid %d, st %s), answering on %s", s.PID, s.Version, s.Socket))
}

// Agents says, per agent st knows, whether it is installed, its version,
// and whether st was tested on it. An agent that is not installed is a
// problem only when neither is: a machine may run only one of them.
func Agents(vs []agent.Verdict) []Check {
	some := false
	for _, v := range vs {
		some = some || v.Support != agent.Missing
	}
	var out []Check
	for _, v := range vs {
		name := "agent " + v.Kind
		tested := fmt.Sprintf("%s to %s", v.Tested.Oldest, v.Tested.Newest)
		switch v.Support {
		case agent.Missing:
			install := fmt.Sprintf("npm install -g %s@%s", v.Tested.Package, v.Tested.Newest)
			if some {
				c := ok(name, fmt.Sprintf("%s is not installed; st starts no %s workers here (to add it: %s)", v.Kind, v.Kind, install))
				out = append(out, c)
			} else {
				out = append(out, bad(name, fmt.Sprintf("%s is not installed, nor is any other agent st starts: st has no agent to start", v.Kind), install))
			}
		case agent.Tested:
			out = append(out, ok(name, fmt.Sprintf("%s %s at %s: st was tested on it (%s)", v.Kind, v.Version, v.Program, tested)))
		case agent.TooOld:
			out = append(out, bad(name, v.Note, v.Hint))
		default: // newer, older, unknown: st starts it, with a note
			c := ok(name, fmt.Sprintf("%s at %s: not tested: %s", v.Kind, v.Program, v.Note))
			c.Try = v.Hint
			out = append(out, c)
		}
	}
	return out
}

// Hooks checks st's hooks in each installed agent's files: there, running
// this st as st writes them, and (Codex) trusted.
func Hooks(ctx context.Context, o hooks.Options, present map[string]bool) []Check {
	var out []Check
	for _, a := range hooks.Kinds() {
		name := "hooks " + a
		if !present[a] {
			out = append(out, ok(name, a+" is not installed: not checked"))
			continue
		}
		ao := o
		ao.Agents = []string{a}
		r, err := hooks.Status(ctx, ao)
		if err != nil {
			out = append(out, bad(name, err.Error(), "st hooks status --agent "+a))
			continue
		}
		out = append(out, hooksCheck(name, r.Agents[0], r.St, "st hooks install --agent "+a))
		if a == hooks.Opencode && r.Agents[0].Installed > 0 {
			if c, ok := opencodeDeps(r.Agents[0].File); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// StatusLine checks st's status line in Claude's settings.json, through
// which Claude gives st its own cost and its account's usage limits. Its
// absence is a note, not a problem: st then estimates Claude's cost from
// its price table, and learns its limits only when one is reached.
func StatusLine(o hooks.Options, present map[string]bool) Check {
	const name = "status line claude"
	if !present[hooks.Claude] {
		return ok(name, "claude is not installed: not checked")
	}
	sl := hooks.StatusLineStatus(o)
	if sl.Error != "" {
		return bad(name, sl.Error, cmp.Or(sl.Hint, "st setup"))
	}
	user := "you had none of your own"
	if sl.User != "" {
		user = "it prints your own: " + sl.User
	}
	switch {
	case sl.Current:
		return ok(name, "st statusline is Claude's status line in "+sl.File+" ("+user+")")
	case sl.Installed:
		c := ok(name, "Claude's status line in "+sl.File+" runs another st's statusline")
		c.Try = "st setup"
		return c
	}
	c := ok(name, "st's status line is not in "+sl.File+": st estimates Claude's cost from its price table and does not see how near its usage limits are")
	c.Try = "st setup"
	return c
}

// opencodeDeps notes an opencode config folder that lacks the
// node_modules opencode's start-up install makes there: until it has
// them, every opencode start installs @opencode-ai/plugin first and loads
// no plugin (st's included) before npm is done, which offline is over a
// minute of retries (reference §12). st starts its workers with npm
// offline meanwhile; an opencode started by hand gets no such help.
func opencodeDeps(pluginFile string) (Check, bool) {
	dir := filepath.Dir(filepath.Dir(pluginFile))
	if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil && fi.IsDir() {
		return Check{}, false
	}
	c := ok("opencode plugins", fmt.Sprintf("%s has no node_modules: each opencode start installs @opencode-ai/plugin there before it loads st's plugin; "+
		"offline that waits over a minute for npm (st starts its opencode workers with npm offline, so theirs fails at once)", dir))
	c.Try = "npm install --prefix " + dir + " @opencode-ai/plugin@" + agent.Opencode.Launch.Tested.Newest
	return c, true
}

// hooksCheck judges one agent's hooks; fix is the command that mends
// them (for that agent only: an agent that is not installed gets no file).
func hooksCheck(name string, a hooks.AgentReport, st, fix string) Check {
	if a.Error != "" {
		try := a.Hint
		if try == "" {
			try = fix
		}
		return bad(name, a.Error, try)
	}
	var wrong []string
	if len(a.Missing) > 0 {
		wrong = append(wrong, fmt.Sprintf("missing for %s", strings.Join(a.Missing, ", ")))
	}
	others := map[string]bool{}
	for _, h := range a.Hooks {
		if h.Installed && !h.Current && h.St != st {
			others[h.St] = true
		}
	}
	for p := range others {
		wrong = append(wrong, "some run another st ("+p+")")
	}
	if len(a.Other) > 0 && len(others) == 0 {
		wrong = append(wrong, "not as this st writes them: "+strings.Join(a.Other, ", "))
	}
	if len(wrong) > 0 {
		return bad(name, fmt.Sprintf("%d/%d of st's hooks in %s run this st; %s", a.Installed, a.Total, a.File, strings.Join(wrong, "; ")), fix)
	}
	if len(a.Warnings) > 0 {
		return bad(name, strings.Join(a.Warnings, "; "), "fix what it names in "+a.File+", then st doctor")
	}
	detail := fmt.Sprintf("%d/%d in %s, running %s", a.Installed, a.Total, a.File, st)
	if t := a.Trust; t != nil {
		switch {
		case t.Error != "" && !t.NoCodex:
			return bad(name, detail+"; trust: "+t.Error, cmp.Or(t.Hint, fix))
		case t.Known && t.Trusted < a.Installed:
			return bad(name, fmt.Sprintf("%s; only %d trusted in %s (Codex skips the others)", detail, t.Trusted, t.File), fix)
		case t.Known:
			detail += fmt.Sprintf(", trusted in %s", t.File)
		}
	}
	return ok(name, detail)
}

// Plugin checks the Claude plugin (its files, and that Claude Code lists
// it enabled), the Codex skills, the Codex rule that lets this st's
// commands leave Codex's sandbox, and Gemini CLI's and opencode's commands.
func Plugin(ctx context.Context, c plugin.Config, present map[string]bool) []Check {
	names := []string{"plugin claude", "skills codex", "rule codex", "commands gemini", "commands opencode"}
	s, err := plugin.GetStatus(ctx, c)
	if err != nil {
		return []Check{bad(names[0], err.Error(), "st plugin status")}
	}
	var out []Check
	for _, a := range s.Agents {
		if !present[a.Agent] {
			n := names[0]
			switch a.Agent {
			case plugin.Codex:
				n = names[1] + ", " + names[2]
			case plugin.Gemini:
				n = names[3]
			case plugin.Opencode:
				n = names[4]
			}
			out = append(out, ok(n, a.Agent+" is not installed: not checked"))
			continue
		}
		switch a.Agent {
		case plugin.Claude:
			out = append(out, pluginCheck(names[0], a, a.Files, "the plugin "+plugin.PluginID+" ("+strings.Join(a.Provides, ", ")+")"))
			continue
		case plugin.Gemini:
			c := pluginCheck(names[3], a, a.Files, "the commands "+strings.Join(a.Provides, ", ")+" in "+a.Dir)
			if a.Skipped && !c.OK {
				// st plugin install leaves out a Gemini CLI that has not
				// run here; st setup installs for every agent on PATH.
				c.Try = "st setup"
			}
			out = append(out, c)
			continue
		case plugin.Opencode:
			out = append(out, opencodeCommandsCheck(names[4], a))
			continue
		}
		var skills, rule []plugin.FileStatus
		for _, f := range a.Files {
			if f.Path == c.CodexRule() {
				rule = append(rule, f)
			} else {
				skills = append(skills, f)
			}
		}
		out = append(out, pluginCheck(names[1], a, skills, "the skills "+strings.Join(a.Provides, ", ")))
		out = append(out, pluginCheck(names[2], a, rule, c.CodexRule()+", which lets "+c.STBin+" run outside Codex's sandbox when Codex asks to escalate"))
	}
	return out
}

func pluginCheck(name string, a plugin.AgentStatus, files []plugin.FileStatus, what string) Check {
	const fix = "st plugin install"
	var wrong []string
	for _, f := range files {
		if f.State != plugin.StateCurrent {
			wrong = append(wrong, f.State+" "+f.Path)
		}
	}
	if len(wrong) > 0 {
		detail := strings.Join(wrong, "; ")
		if a.WrittenBy != "" {
			detail += " (written by " + a.WrittenBy + ")"
		}
		return bad(name, detail, fix)
	}
	if a.Agent == plugin.Claude {
		if a.Registered == nil || !*a.Registered {
			return bad(name, "the files are current, but "+cmp.Or(a.Note, "Claude Code does not list the plugin"), fix)
		}
		what += ", enabled in Claude Code"
	}
	return ok(name, what+": current for this st")
}

// webAddress is the web UI's address as this st's daemon gives it, with
// its token. It is the one place doctor learns the address: when the
// daemon keeps the port it took in $ST_HOME, read it here.
func webAddress(ctx context.Context, d Daemon) (string, error) {
	u, err := d.Web(ctx)
	return u.URL, err
}

// Web checks that the web UI serves at the address the daemon gives.
func Web(ctx context.Context, d Daemon, status *api.StatusInfo, hc *http.Client) Check {
	const name = "web"
	if status == nil {
		return ok(name, "not checked: the daemon is not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := webAddress(ctx, d)
	if err != nil {
		msg, hint := FirstLine(err.Error()), "st down; ST_WEB_PORT=auto st up"
		var ae *api.Error
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		return bad(name, msg, hint)
	}
	base := status.Web
	if base == "" {
		base, _, _ = strings.Cut(u, "?")
	}
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return bad(name, "the daemon gave the address "+base+", which is not a URL: "+err.Error(), "st down; st up")
	}
	res, err := hc.Do(req)
	if err != nil {
		return bad(name, "nothing serves the web UI at "+base+": "+err.Error(), "st down; st up")
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return bad(name, fmt.Sprintf("the web UI at %s answers %s", base, res.Status), "st down; st up")
	}
	return ok(name, "serving at "+base+" (st web prints the address with its token)")
}

// Push says whether gates are pushed to a phone, and whether the push
// carries a button per option. A push without buttons is a note, not a
// problem (the person answers in the web UI or with st gate answer), with
// the setting that adds them.
func Push(status *api.StatusInfo, home string) Check {
	const name = "push"
	switch {
	case status == nil:
		return ok(name, "not checked: the daemon is not running")
	case !status.Push:
		return ok(name, "off: open gates wait in st gate list and the web UI (push_url in config.toml pushes each to a phone)")
	case !status.PushButtons:
		c := ok(name, "on, without buttons: a gate's push carries its question and options as text, since push_answer_url (where your phone reaches st's web UI) is not set")
		c.Try = fmt.Sprintf("push_answer_url = \"https://NAME\" in %s, NAME a tunnel or reverse proxy to st's web UI (%s), then st down; st up",
			filepath.Join(home, "config.toml"), cmp.Or(status.Web, "st web prints it"))
		return c
	}
	return ok(name, "on, with a button per option (each answers its gate once)")
}

// AcceptRemote says whether this machine takes workers from the
// account's other machines; on while not signed in is a problem (no
// machine can reach it).
func AcceptRemote(ctx context.Context, d Daemon, status *api.StatusInfo) Check {
	const name = "accept-remote"
	if status == nil {
		return ok(name, "not checked: the daemon is not running")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := d.AcceptRemote(ctx, api.AcceptRemoteRequest{})
	switch {
	case err != nil:
		return bad(name, FirstLine(err.Error()), "st orch accept-remote status")
	case s.On && !s.SignedIn:
		return bad(name, "on, but this machine is not signed in, so no other machine can reach it", "st login --control-plane URL --account NAME --key KEY (or st orch accept-remote off)")
	case s.On:
		return ok(name, fmt.Sprintf("on: machine %s of account %s takes workers from the account's other machines on %s", s.Machine, s.Account, s.Addr))
	}
	return ok(name, "off: this machine takes no workers from other machines (st orch accept-remote on to take them)")
}

// SignIn checks this machine's sign-in to an account: none is fine (st
// then works on this machine alone); one whose certificate the other
// machines would refuse is not.
func SignIn(home string, now time.Time) Check {
	const name = "sign-in"
	const login = "st login --control-plane URL --account NAME --key KEY"
	id, err := remote.LoadIdentity(home)
	if errors.Is(err, remote.ErrNotSignedIn) {
		return ok(name, "not signed in: workers run on this machine only")
	}
	if err != nil {
		return bad(name, FirstLine(err.Error()), login)
	}
	end, err := id.CheckCertificate(now)
	if err != nil {
		detail := "the machine's certificate is not valid: " + err.Error()
		if !end.IsZero() && now.After(end) {
			detail = fmt.Sprintf("the machine's certificate expired at %s (st renews it while the daemon runs)", end.Local().Format(time.RFC3339))
		}
		return bad(name, detail, fmt.Sprintf("st login --control-plane %s --account %s --key KEY", id.ControlPlane, id.Account))
	}
	return ok(name, fmt.Sprintf("machine %s (%s) of account %s at %s; certificate valid until %s",
		id.Name, id.Slug, id.Account, id.ControlPlane, end.Local().Format(time.RFC3339)))
}

// FirstLine is an error's message without the hint lines under it.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// opencodeCommandsCheck checks st's opencode commands, which make an
// opencode session a coordinator (/sophonz-orchestrate) or tell a worker
// how to report (/sophonz-worker).
func opencodeCommandsCheck(name string, a plugin.AgentStatus) Check {
	c := pluginCheck(name, a, a.Files, "the commands "+strings.Join(a.Provides, ", ")+" in "+a.Dir)
	if a.Skipped && !c.OK {
		// st plugin install leaves out an opencode that has not run
		// here (no config folder); st setup installs for every agent
		// on PATH.
		c.Try = "st setup"
	}
	return c
}
