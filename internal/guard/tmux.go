package guard

import (
	"fmt"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/shell"
)

// server is what st knows of the tmux server a tmux command talks to.
type server struct {
	ours bool      // it may be the agent's own server
	sock shell.Arg // its socket, as far as known (for the TMUX of what it runs)
}

// globals are tmux's global options.
type globals struct {
	label, sock, shellCmd *shell.Arg
	control               bool        // -C: tmux commands come on standard input
	rest                  []shell.Arg // the commands
	hole                  *shell.Arg  // a word st cannot know among the options
	quits                 bool        // tmux prints its version or usage
}

func tmuxGlobals(args []shell.Arg) globals {
	var g globals
	f, rest, ok := tmuxOpts(args, "2CDdhlNqS:uUvVL:f:c:T:")
	if !ok || f.has('V') {
		// tmux prints its usage or its version.
		g.quits = true
		return g
	}
	for flag, at := range map[byte]**shell.Arg{'L': &g.label, 'S': &g.sock, 'c': &g.shellCmd} {
		if f.has(flag) {
			v := f.val(flag)
			*at = &v
		}
	}
	g.control = f.has('C')
	if len(rest) > 0 {
		if _, known := rest[0].Text(); !known && !rest[0].NotOption() {
			// A word st cannot know where tmux reads its options or its
			// command: it may be -L, -S, or kill-server.
			g.hole = &rest[0]
		}
	}
	g.rest = rest
	return g
}

// tmux judges a tmux command: its server, then each of its commands.
func (ch *checker) tmux(c *shell.Cmd) string {
	g := tmuxGlobals(c.Args[1:])
	if g.quits {
		return ""
	}
	if g.hole != nil {
		// A word st cannot know where tmux reads its options or its
		// command: it may be -L, -S, or kill-server.
		if ch.serverMayBeOurs(c, g.label, g.sock) {
			return unknown(fmt.Sprintf("%s: tmux's option or command %s", quote(showCmd(c)), show(g.hole.String())), adviceName)
		}
		return ""
	}
	srv := ch.server(c, g.label, g.sock)
	if g.shellCmd != nil {
		// tmux -c runs the command with the default shell, in the
		// caller's environment.
		if r := ch.text(c, *g.shellCmd, "tmux -c", nil); r != "" {
			return r
		}
	}
	if g.control && srv.ours {
		// Control mode reads tmux commands, a line each, from its input.
		text, ok := c.Stdin.Known()
		if !ok {
			return unknown(fmt.Sprintf("%s reads tmux commands from standard input st cannot read", quote(showCmd(c))), "Give tmux its commands as arguments.")
		}
		var lines []string
		for _, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			if r := ch.tmuxString(c, shell.Lit(strings.Join(lines, " \\; ")), srv); r != "" {
				return r
			}
		}
	}
	return ch.tmuxCommands(c, splitCommands(g.rest), srv)
}

// serverMayBeOurs: before its options are read, could the command reach
// the agent's server?
func (ch *checker) serverMayBeOurs(c *shell.Cmd, label, sock *shell.Arg) bool {
	return ch.server(c, label, sock).ours || label == nil && sock == nil
}

// server finds the socket as tmux does: -S, else -L, else $TMUX's socket,
// else the default socket.
func (ch *checker) server(c *shell.Cmd, label, sock *shell.Arg) server {
	if sock != nil {
		return server{ours: ch.couldBeSocket(c, *sock), sock: *sock}
	}
	if label == nil {
		t, set := c.Getenv("TMUX")
		srv := server{}
		if set != shell.No {
			p := socketOf(t)
			srv.sock = p
			if ch.couldBeSocket(c, p) {
				srv.ours = true
			}
			if set == shell.Yes && !t.Could("") {
				return srv
			}
		}
		def := shell.Lit("default")
		if ch.labelCould(c, def) {
			srv.ours = true
		}
		if len(srv.sock.Holes()) == 0 && srv.sock.String() == "" {
			srv.sock = ch.labelSocket(c, def)
		}
		return srv
	}
	return server{ours: ch.labelCould(c, *label), sock: ch.labelSocket(c, *label)}
}

// socketOf is the socket part of a $TMUX value (socket,pid,index).
func socketOf(t shell.Arg) shell.Arg {
	p, _ := t.CutAt(",")
	return p
}

// labelSocket is the socket of -L label.
func (ch *checker) labelSocket(c *shell.Cmd, label shell.Arg) shell.Arg {
	dir, set := c.Getenv("TMUX_TMPDIR")
	if set == shell.No {
		dir = shell.Lit("/tmp")
	}
	return shell.Concat(dir, shell.Lit("/tmux-"), ch.uidArg(c), shell.Lit("/"), label)
}

func (ch *checker) uidArg(c *shell.Cmd) shell.Arg {
	if c.OtherUser {
		return shell.HoleArg(&shell.Hole{Kind: shell.FromSpecial, Src: "(another user's id)"})
	}
	return shell.Lit(ch.uid)
}

// labelCould: -L label may name the agent's server. tmux resolves the
// folder's links (/tmp may be /private/tmp), so the label and the user's
// folder name decide.
func (ch *checker) labelCould(c *shell.Cmd, label shell.Arg) bool {
	uidDir := shell.Concat(shell.Lit("tmux-"), ch.uidArg(c))
	return label.Could(path.Base(ch.ours)) && uidDir.Could(path.Base(path.Dir(ch.ours)))
}

// couldBeSocket: a path that may be the agent's socket, by its text, by a
// link this command made before, or by the file it is on disk.
func (ch *checker) couldBeSocket(c *shell.Cmd, p shell.Arg) bool {
	for _, h := range p.Holes() {
		if fromTMUX(h) {
			return true
		}
	}
	if s, ok := p.Text(); ok && !p.Glob {
		if s == "" {
			return false
		}
		full := ch.abs(c, s)
		if full == "" {
			// Relative to a folder st does not know: judge the name.
			return path.Base(s) == path.Base(ch.ours)
		}
		if samePath(full, ch.ours) || (ch.real != "" && samePath(full, ch.real)) {
			return true
		}
		if sameFile(full, ch.ours) {
			return true
		}
		for _, w := range ch.links {
			lp, ok := w.Path.Text()
			if !ok || ch.abs(w.Cmd, lp) == full {
				return true
			}
		}
		return false
	}
	if p.Could(ch.ours) || (ch.real != "" && p.Could(ch.real)) {
		return true
	}
	// Relative, with holes: its folder is the command's.
	if !p.HasPrefix("/") {
		d, _ := c.Dir.Text()
		return shell.Concat(shell.Lit(d+"/"), p).Could(ch.ours) || p.Base().Could(path.Base(ch.ours))
	}
	return false
}

// samePath compares cleaned absolute paths, a suffix of three folders or
// more counting as the same (/private/tmp/x and /tmp/x).
func samePath(a, b string) bool {
	a, b = path.Clean(a), path.Clean(b)
	if a == b {
		return true
	}
	suffix := func(long, short string) bool {
		return len(long) > len(short) && strings.HasSuffix(long, short) && strings.Count(short, "/") >= 3
	}
	return suffix(a, b) || suffix(b, a)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// splitCommands splits tmux's arguments into commands as tmux does: an
// argument ending in ';' ends a command, unless it ends in '\;'. A word
// st cannot know may be a ';' of its own: it is kept, and what follows
// is judged as if it could start a command (see tmuxCommands).
func splitCommands(args []shell.Arg) [][]shell.Arg {
	var out [][]shell.Arg
	var cur []shell.Arg
	for _, a := range args {
		s, ok := a.Text()
		end := false
		if ok {
			if t, cut := strings.CutSuffix(s, ";"); cut {
				if u, esc := strings.CutSuffix(t, "\\"); esc {
					a = shell.Lit(u + ";")
				} else {
					end = true
					a = shell.Lit(t)
				}
			}
		}
		if !end || a.String() != "" {
			cur = append(cur, a)
		}
		if end {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// tmuxTable lists tmux's commands and their aliases, to resolve unique
// prefixes as tmux does.
var tmuxTable = [][2]string{
	{"attach-session", "attach"}, {"bind-key", "bind"}, {"break-pane", "breakp"}, {"capture-pane", "capturep"},
	{"choose-buffer", ""}, {"choose-client", ""}, {"choose-tree", ""}, {"clear-history", "clearhist"},
	{"clear-prompt-history", "clearphist"}, {"clock-mode", ""}, {"command-prompt", ""}, {"confirm-before", "confirm"},
	{"copy-mode", ""}, {"customize-mode", ""}, {"delete-buffer", "deleteb"}, {"detach-client", "detach"},
	{"display-menu", "menu"}, {"display-message", "display"}, {"display-panes", "displayp"}, {"display-popup", "popup"},
	{"find-window", "findw"}, {"has-session", "has"}, {"if-shell", "if"}, {"join-pane", "joinp"},
	{"kill-pane", "killp"}, {"kill-server", ""}, {"kill-session", ""}, {"kill-window", "killw"},
	{"last-pane", "lastp"}, {"last-window", "last"}, {"link-window", "linkw"}, {"list-buffers", "lsb"},
	{"list-clients", "lsc"}, {"list-commands", "lscm"}, {"list-keys", "lsk"}, {"list-panes", "lsp"},
	{"list-sessions", "ls"}, {"list-windows", "lsw"}, {"load-buffer", "loadb"}, {"lock-client", "lockc"},
	{"lock-server", "lock"}, {"lock-session", "locks"}, {"move-pane", "movep"}, {"move-window", "movew"},
	{"new-session", "new"}, {"new-window", "neww"}, {"next-layout", "nextl"}, {"next-window", "next"},
	{"paste-buffer", "pasteb"}, {"pipe-pane", "pipep"}, {"previous-layout", "prevl"}, {"previous-window", "prev"},
	{"refresh-client", "refresh"}, {"rename-session", "rename"}, {"rename-window", "renamew"}, {"resize-pane", "resizep"},
	{"resize-window", "resizew"}, {"respawn-pane", "respawnp"}, {"respawn-window", "respawnw"}, {"rotate-window", "rotatew"},
	{"run-shell", "run"}, {"save-buffer", "saveb"}, {"select-layout", "selectl"}, {"select-pane", "selectp"},
	{"select-window", "selectw"}, {"send-keys", "send"}, {"send-prefix", ""}, {"server-access", ""},
	{"set-buffer", "setb"}, {"set-environment", "setenv"}, {"set-hook", ""}, {"set-option", "set"},
	{"set-window-option", "setw"}, {"show-buffer", "showb"}, {"show-environment", "showenv"}, {"show-hooks", ""},
	{"show-messages", "showmsgs"}, {"show-options", "show"}, {"show-prompt-history", "showphist"}, {"show-window-options", "showw"},
	{"source-file", "source"}, {"split-window", "splitw"}, {"start-server", "start"}, {"suspend-client", "suspendc"},
	{"swap-pane", "swapp"}, {"swap-window", "swapw"}, {"switch-client", "switchc"}, {"unbind-key", "unbind"},
	{"unlink-window", "unlinkw"}, {"wait-for", "wait"},
}

// tmuxCommand resolves a tmux command name: an alias, the full name, or
// a unique prefix. It returns "" for unknown or ambiguous names (tmux
// refuses them).
func tmuxCommand(s string) string {
	if s == "" {
		return ""
	}
	for _, c := range tmuxTable {
		if c[1] == s || c[0] == s {
			return c[0]
		}
	}
	found := ""
	for _, c := range tmuxTable {
		if strings.HasPrefix(c[0], s) {
			if found != "" {
				return ""
			}
			found = c[0]
		}
	}
	return found
}

// riskyTmux are the tmux commands that may end the server, or run text
// (shell or tmux) that may.
var riskyTmux = map[string]bool{
	"kill-server": true, "kill-session": true, "kill-window": true, "kill-pane": true, "unlink-window": true,
	"run-shell": true, "if-shell": true, "confirm-before": true, "set-hook": true, "command-prompt": true,
	"new-session": true, "new-window": true, "split-window": true, "respawn-pane": true, "respawn-window": true,
	"display-popup": true, "pipe-pane": true, "send-keys": true, "source-file": true, "set-option": true,
	"set-window-option": true, "display-message": true, "display-menu": true, "detach-client": true,
	"choose-tree": true, "choose-client": true, "choose-buffer": true, "paste-buffer": true, "send-prefix": true,
}

// spellings are every word tmux resolves to a risky command. (Made at
// first use: made as every st process started, it was 2–3 % of a hook's
// CPU, by perf.)
var spellings = sync.OnceValue(func() []string {
	var out []string
	for _, c := range tmuxTable {
		if !riskyTmux[c[0]] {
			continue
		}
		if c[1] != "" {
			out = append(out, c[1])
		}
		for n := 1; n <= len(c[0]); n++ {
			if tmuxCommand(c[0][:n]) == c[0] {
				out = append(out, c[0][:n])
			}
		}
	}
	return out
})

// tmuxCommands judges each command of a tmux command list. On another
// server only what its commands run matters: shell text there may still
// name the agent's server, or run st outside the agent's processes.
func (ch *checker) tmuxCommands(c *shell.Cmd, cmds [][]shell.Arg, srv server) string {
	for _, cmd := range cmds {
		if len(cmd) == 0 {
			continue
		}
		if r := ch.tmuxOne(c, cmd, srv); r != "" {
			return r
		}
		// A word st cannot know may be a ';' of its own: what follows
		// may start a command.
		for k := 1; k < len(cmd) && srv.ours; k++ {
			if !cmd[k-1].IsKnown() && cmd[k].CouldAny(spellings()...) {
				if r := ch.tmuxOne(c, cmd[k:], srv); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

// tmuxOne judges one tmux command: what ends the agent's server, then
// what it has the server run.
func (ch *checker) tmuxOne(c *shell.Cmd, cmd []shell.Arg, srv server) string {
	word := cmd[0]
	s, ok := word.Known()
	if !ok {
		if srv.ours && word.CouldAny(spellings()...) {
			return unknown(fmt.Sprintf("%s: tmux's command %s may be kill-server", quote(showCmd(c)), show(word.String())), adviceName)
		}
		return ""
	}
	name := tmuxCommand(s)
	args := cmd[1:]
	d := showCmd(c)
	if name != "" && name != s && strings.HasPrefix(name, "kill") {
		d += fmt.Sprintf("; tmux reads %q as %s", s, name)
	}
	// A format with #( runs a shell command in the server.
	for _, a := range args {
		if t, ok := a.Text(); ok && strings.Contains(t, "#(") {
			if r := ch.formatJobs(c, t, srv); r != "" {
				return r
			}
		}
	}
	if srv.ours {
		if r := ch.tmuxEnds(d, name, args); r != "" {
			return r
		}
		if r := ch.ownPane(d, name, args); r != "" {
			return r
		}
	}
	if spec, ok := tmuxRunSpecs[name]; ok {
		f, pos, ok := tmuxOpts(args, spec)
		if ok {
			return ch.tmuxRuns(c, d, name, f, pos, srv)
		}
	}
	return ""
}

// tmuxEnds judges the tmux commands that end panes, windows, sessions or
// the server, and the options that end it or run commands.
func (ch *checker) tmuxEnds(d, name string, args []shell.Arg) string {
	switch name {
	case "kill-server":
		return refuse(d)
	case "kill-session", "kill-window", "kill-pane", "unlink-window":
		f, _, ok := tmuxOpts(args, map[string]string{"kill-session": "aCt:", "kill-window": "at:", "kill-pane": "at:", "unlink-window": "kt:"}[name])
		switch {
		case !ok, name == "unlink-window" && !f.has('k'), name == "kill-session" && f.has('C') && !f.has('a'):
			return "" // tmux refuses it; unlink-window without -k keeps the window; -C clears alerts
		case f.has('a'):
			return refuse(d + "; -a kills every other one, and the last one ends the server")
		case !f.has('t'):
			return refuse(d + "; without -t it kills the agent's own, and the last one ends the server")
		}
		t, known := f.val('t').Known()
		if !known {
			return unknown(fmt.Sprintf("%s: its target %s may be the last one, which ends the server", quote(d), show(f.val('t').String())),
				"Name the target plainly (tmux "+name+" -t NAME), after checking it is not the agent's own.")
		}
		return ch.lastKill(d, name, t)
	case "set-option", "set-window-option":
		if _, pos, ok := tmuxOpts(args, "aFgopqst:uUw"); ok && len(pos) > 0 {
			opt := pos[0]
			if !opt.IsKnown() || riskyOption(opt.String()) {
				return refuse(fmt.Sprintf("%s: the option %s can end the server or run commands in it", d, show(opt.String())))
			}
		}
	case "display-message":
		if f, pos, ok := tmuxOpts(args, "ac:d:F:INpt:v"); ok {
			if f.has('F') && !f.val('F').IsKnown() {
				return unknown(fmt.Sprintf("%s: its format %s may run a command (#(...))", quote(d), show(f.val('F').String())), adviceName)
			}
			for _, p := range pos {
				if !p.IsKnown() {
					return unknown(fmt.Sprintf("%s: its message %s may run a command (#(...))", quote(d), show(p.String())), adviceName)
				}
			}
		}
	}
	return ""
}

// tmuxRunSpecs are the getopt specs of the tmux commands that run shell
// text or tmux commands of their own.
var tmuxRunSpecs = map[string]string{
	"run-shell": "bd:Ct:c:Es:", "if-shell": "bFt:", "confirm-before": "bc:p:t:y", "command-prompt": "1bFkiI:Np:t:T:",
	"display-menu": "b:c:C:H:s:S:Ot:T:x:y:", "detach-client": "aPE:s:t:", "choose-tree": "GNrswZF:f:K:O:t:",
	"choose-client": "GNrswZF:f:K:O:t:", "choose-buffer": "GNrswZF:f:K:O:t:", "set-hook": "agpRt:uw",
	"send-keys": "c:FHKlMN:Rt:X", "source-file": "Fnqv",
	"new-session": "Ac:dDe:EF:f:n:Ps:t:x:Xy:", "new-window": "abc:de:F:kn:PSt:", "split-window": "bc:de:fF:hIl:p:Pt:vZ",
	"respawn-pane": "c:e:kt:", "respawn-window": "c:e:kt:", "display-popup": "Bb:Cc:d:e:Eh:kNs:S:t:T:w:x:y:", "pipe-pane": "IOot:",
}

// tmuxRuns judges what a tmux command has the server run: shell text
// (run-shell, if-shell, a new pane, keys typed into one) as the agent's
// own command, tmux commands (if-shell's, hooks, menus) as tmux's.
func (ch *checker) tmuxRuns(c *shell.Cmd, d, name string, f tmuxFlags, pos []shell.Arg, srv server) string {
	first := func(fn func(shell.Arg) string) string {
		if len(pos) == 0 {
			return ""
		}
		return fn(pos[0])
	}
	inServer := func(a shell.Arg) string { return ch.inServer(c, a, srv, "tmux "+name) }
	tmuxString := func(a shell.Arg) string { return ch.tmuxString(c, a, srv) }
	switch name {
	case "run-shell":
		if f.has('C') {
			return first(tmuxString)
		}
		return first(inServer)
	case "if-shell":
		if !f.has('F') {
			if r := first(inServer); r != "" {
				return r
			}
		}
		for _, p := range pos[min(1, len(pos)):min(3, len(pos))] {
			if r := tmuxString(p); r != "" {
				return r
			}
		}
	case "confirm-before", "command-prompt", "choose-tree", "choose-client", "choose-buffer":
		return first(tmuxString)
	case "display-menu":
		for k := 2; k < len(pos); k += 3 {
			if r := tmuxString(pos[k]); r != "" {
				return r
			}
		}
	case "detach-client":
		if f.has('E') {
			return inServer(f.val('E'))
		}
	case "set-hook":
		if !f.has('u') && len(pos) > 1 {
			return tmuxString(pos[1])
		}
	case "send-keys":
		return ch.sendKeys(c, d, f, pos, srv)
	case "source-file":
		for _, p := range pos {
			if r := ch.sourceFile(c, p, srv); r != "" {
				return r
			}
		}
	default: // new-session, new-window, split-window, respawn-*, display-popup, pipe-pane
		if len(pos) > 0 {
			return inServer(shell.Join(pos, " "))
		}
	}
	return ""
}

// sendKeys judges the keys send-keys types: a shell in that pane may run
// them.
func (ch *checker) sendKeys(c *shell.Cmd, d string, f tmuxFlags, pos []shell.Arg, srv server) string {
	if f.has('X') {
		return ""
	}
	keys, known := keysText(pos, f.has('l'), f.has('H'))
	if !known {
		if !srv.ours {
			return ""
		}
		return unknown(fmt.Sprintf("%s types text st cannot know into a pane", quote(d)),
			"Type plain text, or use st worker send to reach another agent.")
	}
	return ch.inServer(c, shell.Lit(keys), srv, "tmux send-keys")
}

// riskyOption: tmux options that end the server, or hold commands it runs.
func riskyOption(name string) bool {
	name = strings.TrimPrefix(name, "@")
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "command-alias", "default-command", "default-shell", "exit-unattached", "destroy-unattached", "exit-empty",
		"lock-command", "lock-after-time", "remain-on-exit", "detach-on-destroy":
		return name != "remain-on-exit" && name != "detach-on-destroy"
	}
	for _, p := range []string{"after-", "alert-", "client-", "pane-", "session-", "window-", "command-error"} {
		if strings.HasPrefix(name, p) && !strings.Contains(name, "style") && !strings.Contains(name, "format") &&
			!strings.Contains(name, "status") && !strings.HasSuffix(name, "-size") && !strings.Contains(name, "border") &&
			!strings.Contains(name, "active") && !strings.Contains(name, "base-index") {
			return true
		}
	}
	return false
}

type tmuxFlags map[byte]shell.Arg

func (f tmuxFlags) has(c byte) bool      { _, ok := f[c]; return ok }
func (f tmuxFlags) val(c byte) shell.Arg { return f[c] }

// tmuxOpts parses a tmux command's flags by its getopt spec. ok is false
// when tmux would refuse them.
func tmuxOpts(args []shell.Arg, spec string) (tmuxFlags, []shell.Arg, bool) {
	flags := tmuxFlags{}
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			break
		}
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		next := false
		for j := 1; j < len(s); j++ {
			k := strings.IndexByte(spec, s[j])
			if k < 0 || s[j] == ':' {
				return nil, nil, false
			}
			if k+1 < len(spec) && spec[k+1] == ':' {
				switch {
				case j+1 < len(s):
					flags[s[j]] = shell.Lit(s[j+1:])
				case i+1 < len(args):
					flags[s[j]] = args[i+1]
					next = true
				default:
					return nil, nil, false
				}
				break
			}
			flags[s[j]] = shell.Arg{}
		}
		i++
		if next {
			i++
		}
	}
	return flags, args[min(i, len(args)):], true
}

// keysText is what send-keys types, as shell text. known is false when a
// key st cannot know is typed.
func keysText(keys []shell.Arg, literal, hex bool) (string, bool) {
	var b strings.Builder
	for _, k := range keys {
		s, ok := k.Known()
		if !ok {
			return "", false
		}
		if hex {
			var c byte
			if _, err := fmt.Sscanf(s, "%x", &c); err != nil {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if !literal {
			switch s {
			case "Enter", "C-m", "C-j", "KPEnter", "^M", "^J":
				b.WriteByte('\n')
				continue
			case "Space":
				b.WriteByte(' ')
				continue
			case "Tab", "C-i":
				b.WriteByte('\t')
				continue
			case "C-c", "C-u", "Escape":
				// The line typed so far is dropped.
				t := b.String()
				b.Reset()
				if i := strings.LastIndexByte(t, '\n'); i >= 0 {
					b.WriteString(t[:i+1])
				}
				continue
			}
		}
		b.WriteString(s)
	}
	return b.String(), true
}

// inServer checks shell text the server runs (a new pane, run-shell): its
// $TMUX names that server.
func (ch *checker) inServer(c *shell.Cmd, text shell.Arg, srv server, via string) string {
	if _, known := text.Text(); !known && !srv.ours {
		return "" // another server's: what st cannot read there is a rail's blind spot
	}
	set := map[string]shell.Arg{}
	if srv.sock.String() != "" || len(srv.sock.Holes()) > 0 {
		set["TMUX"] = shell.Concat(srv.sock, shell.Lit(",0,0"))
	}
	return ch.text(c, text, via, set)
}

// text checks shell text that c runs.
func (ch *checker) text(c *shell.Cmd, text shell.Arg, via string, set map[string]shell.Arg) string {
	sub := ch.script.ReadText(text, c, via, set)
	if r := ch.cmds(sub.Cmds); r != "" {
		return r
	}
	if sub.Err != nil {
		if _, ok := sub.Err.(*shell.LimitError); ok {
			return cannotCheck(sub.Err.Error())
		}
	}
	return ""
}

// tmuxString checks a tmux command string (if-shell's commands,
// confirm-before, set-hook).
func (ch *checker) tmuxString(c *shell.Cmd, text shell.Arg, srv server) string {
	t, ok := text.Text()
	if !ok {
		if !srv.ours {
			return ""
		}
		return unknown(fmt.Sprintf("%s runs tmux commands st cannot read: %s", quote(showCmd(c)), show(text.String())), adviceName)
	}
	// tmux parses its command strings much as the shell splits words.
	sub := ch.script.ReadText(shell.Lit("tmux "+t), c, "tmux command", nil)
	for _, sc := range sub.Cmds {
		if sc.Name() != "tmux" && sc.Text == nil {
			continue
		}
		if sc.Text != nil {
			return unknown(fmt.Sprintf("%s runs tmux commands st cannot read: %s", quote(showCmd(c)), show(t)), adviceName)
		}
		if r := ch.tmuxCommands(sc, splitCommands(sc.Args[1:]), srv); r != "" {
			return r
		}
	}
	if sub.Err != nil {
		return cannotCheck(sub.Err.Error())
	}
	return ""
}

// formatJobs checks the shell commands of #(...) in a tmux format.
func (ch *checker) formatJobs(c *shell.Cmd, t string, srv server) string {
	for {
		i := strings.Index(t, "#(")
		if i < 0 {
			return ""
		}
		depth, j := 1, i+2
		for j < len(t) && depth > 0 {
			switch t[j] {
			case '(':
				depth++
			case ')':
				depth--
			}
			j++
		}
		inner := t[i+2 : max(i+2, j-1)]
		if r := ch.inServer(c, shell.Lit(inner), srv, "tmux #(...)"); r != "" {
			return r
		}
		t = t[j:]
	}
}

// sourceFile checks a file of tmux commands: read from disk when it is
// there, refused when st cannot know which file it is or what is in it.
func (ch *checker) sourceFile(c *shell.Cmd, p shell.Arg, srv server) string {
	s, ok := p.Known()
	d := quote(showCmd(c))
	if !ok {
		return unknown(fmt.Sprintf("%s: st cannot tell which file %s is", d, show(p.String())), "Name the file plainly.")
	}
	if s == "-" || s == "/dev/stdin" || s == "/dev/fd/0" || s == "/proc/self/fd/0" {
		text, ok := c.Stdin.Known()
		if !ok {
			return unknown(d+" reads tmux commands from standard input st cannot read", "Put them in a file.")
		}
		return ch.tmuxString(c, shell.Lit(text), srv)
	}
	full := ch.abs(c, s)
	if full == "" {
		return unknown(fmt.Sprintf("%s: st cannot tell where %s is", d, show(s)), "Give the file's full path.")
	}
	for _, w := range shell.Writes(ch.script.Cmds) {
		if wp, ok := w.Path.Text(); ok && ch.abs(w.Cmd, wp) == full {
			return unknown(fmt.Sprintf("%s: this command writes %s before tmux reads it", d, show(s)), "Write the file first, in a command of its own.")
		}
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "" // tmux cannot read it either
	}
	if !fi.Mode().IsRegular() {
		return unknown(fmt.Sprintf("%s: %s is not a plain file st can read", d, show(s)), "Put the commands in a file.")
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return ""
	}
	if len(data) > 256<<10 {
		return cannotCheck(fmt.Sprintf("%s is longer than st reads", s))
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "%") {
			lines = append(lines, l)
		}
	}
	return ch.tmuxString(c, shell.Lit(strings.Join(lines, " \\; ")), srv)
}
