package guard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sophonz/st/internal/shell"
)

// Server is what the guard reads of the agent's own tmux server, when a
// command's verdict depends on it: whether a session, window or pane it
// kills is the server's last (tmux ends with its last session), whether a
// pid it signals is the server's or a pane's.
type Server struct {
	// Pid is the server's process id; 0 when unknown.
	Pid int
	// Args is the server's command line as ps and pkill -f see it (the
	// command that started it); "" when unknown.
	Args string
	// Panes are every pane of the server; none when no server runs.
	Panes []Pane
}

// Pane is one pane of the server with its window and session.
type Pane struct {
	ID, Index                       string // %3, 0
	Pid                             int    // the process tmux started in it
	Window, WindowIndex, WindowName string // @2, 1, editor
	Session, SessionName            string // $1, work
}

// paneFormat is what the guard reads of each pane (st's daemon asks its
// tmux server for it: the hook runs no tmux); names come last, as they
// are free text.
var paneFormat = strings.Join([]string{"#{pid}", "#{pane_id}", "#{pane_index}", "#{pane_pid}", "#{window_id}",
	"#{window_index}", "#{session_id}", "#{session_name}", "#{window_name}"}, "\x1f")

// PaneFormat is the tmux format ParseServer reads, a line per pane.
func PaneFormat() string { return paneFormat }

// ParseServer reads list-panes -a -F PaneFormat().
func ParseServer(out string) (Server, error) {
	var s Server
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "\x1f", 9)
		if len(f) != 9 || !strings.HasPrefix(f[1], "%") {
			return Server{}, fmt.Errorf("tmux printed %q, not a pane", line)
		}
		s.Pid, _ = strconv.Atoi(f[0])
		pid, _ := strconv.Atoi(f[3])
		s.Panes = append(s.Panes, Pane{ID: f[1], Index: f[2], Pid: pid, Window: f[4], WindowIndex: f[5],
			Session: f[6], SessionName: f[7], WindowName: f[8]})
	}
	return s, nil
}

// facts is the server as the guard asked it, once per check.
func (ch *checker) facts() (Server, error) {
	if !ch.asked {
		ch.asked = true
		if ch.g.Ask == nil {
			ch.srvErr = errors.New("the guard was given no way to ask it")
		} else {
			ch.srv, ch.srvErr = ch.g.Ask(ch.ours)
		}
	}
	return ch.srv, ch.srvErr
}

// serverPid is the pid of the agent's server: $TMUX's second field, or
// tmux's answer; 0 when neither tells.
func (ch *checker) serverPid() int {
	if _, rest, ok := strings.Cut(ch.g.TmuxSocket, ","); ok {
		p, _, _ := strings.Cut(rest, ",")
		if n, err := strconv.Atoi(p); err == nil && n > 0 {
			return n
		}
	}
	s, _ := ch.facts()
	return s.Pid
}

// ends records that a command ends one of units (each a session, window
// or pane, as its panes); it returns a reason when the kills the command
// holds so far may leave the server no pane: tmux exits with its last
// session.
func (ch *checker) ends(d, what string, units [][]string) string {
	s, _ := ch.facts()
	if len(units) == 0 || len(s.Panes) == 0 {
		return ""
	}
	ch.kills = append(ch.kills, units)
	if !mayCover(s, ch.kills) {
		return ""
	}
	return refuse(d + "; " + what + ", and tmux exits when its last session ends")
}

// mayCover reports whether one unit from each kill may end every pane of
// the server. Past a few thousand choices it answers yes (refusing more,
// never less).
func mayCover(s Server, kills [][][]string) bool {
	n := 1
	for _, k := range kills {
		if n *= len(k); n > 4096 {
			return true
		}
	}
	left := map[string]int{}
	for _, p := range s.Panes {
		left[p.ID] = 0
	}
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(kills) {
			for _, c := range left {
				if c == 0 {
					return false
				}
			}
			return true
		}
		for _, unit := range kills[i] {
			for _, p := range unit {
				left[p]++
			}
			ok := try(i + 1)
			for _, p := range unit {
				left[p]--
			}
			if ok {
				return true
			}
		}
		return false
	}
	return try(0)
}

// lastKill judges kill-session, kill-window, kill-pane and unlink-window
// -k with a target written plainly, against the server's panes: the
// server ends when that target (with what the command ended before it)
// may be its last.
func (ch *checker) lastKill(d, cmd, target string) string {
	s, err := ch.facts()
	if err != nil {
		return unknown(fmt.Sprintf("%s: st could not ask the tmux server whether %s is its last (%v)", quote(d), quote(target), err),
			"Try again; tmux must answer `tmux list-panes -a` for st to let a kill through.")
	}
	var units map[string]bool
	switch cmd {
	case "kill-session":
		units = s.sessionTarget(target)
	case "kill-pane":
		units = s.paneTarget(target)
	default:
		units = s.windowTarget(target)
	}
	return ch.ends(d, fmt.Sprintf("%s may be the last %s of the server this agent runs in",
		quote(target), strings.TrimPrefix(strings.TrimPrefix(cmd, "kill-"), "unlink-")), s.units(units))
}

// units lists the panes of each session, window or pane in ids.
func (s Server) units(ids map[string]bool) [][]string {
	var out [][]string
	for id := range ids {
		out = append(out, s.panesOf(map[string]bool{id: true}))
	}
	return out
}

// target is a tmux target split as tmux splits it: session:window.pane.
type target struct {
	session, window, pane *string
	exactSession          bool
	exactWindow           bool
}

// splitTarget splits t as cmd-find.c does; kind says what a bare word
// names ("session", "window" or "pane").
func splitTarget(t, kind string) target {
	var out target
	str := func(s string) *string { return &s }
	rest, period := t, ""
	colon := strings.IndexByte(t, ':')
	if colon >= 0 {
		out.session = str(t[:colon])
		rest = t[colon+1:]
	}
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		period = rest[i+1:]
		rest = rest[:i]
		out.pane = str(period)
	}
	switch {
	case colon >= 0 || out.pane != nil:
		out.window = str(rest)
	case strings.HasPrefix(t, "$"):
		out.session = str(t)
	case strings.HasPrefix(t, "@"):
		out.window = str(t)
	case strings.HasPrefix(t, "%"):
		out.pane = str(t)
	default:
		switch kind {
		case "session":
			out.session = str(t)
		case "window":
			out.window = str(t)
		default:
			out.pane = str(t)
		}
	}
	if out.session != nil && strings.HasPrefix(*out.session, "=") {
		out.session, out.exactSession = str((*out.session)[1:]), true
	}
	if out.window != nil && strings.HasPrefix(*out.window, "=") {
		out.window, out.exactWindow = str((*out.window)[1:]), true
	}
	for _, p := range []**string{&out.session, &out.window, &out.pane} {
		if *p != nil && **p == "" {
			*p = nil // empty is the current one, which may be any
		}
	}
	return out
}

// nameMatch: tmux takes a name exactly, then as a unique prefix, then as
// an fnmatch pattern. A prefix or pattern shared by several is an error
// in tmux; counting it as a match refuses more, never less.
func nameMatch(tok, name string, exact bool) bool {
	if tok == name {
		return true
	}
	if exact {
		return false
	}
	pat := shell.Lit(tok)
	pat.Glob = true
	return strings.HasPrefix(name, tok) || pat.Could(name)
}

// special: a word tmux reads relative to what is current (the last,
// next, marked, mouse... window or pane): it may be any.
func special(tok string) bool {
	switch tok {
	case "!", "^", "$", "~", "=", "+", "-", "top", "bottom", "left", "right", "top-left", "top-right",
		"bottom-left", "bottom-right":
		return true
	}
	return strings.HasPrefix(tok, "{") || strings.HasPrefix(tok, "+") || strings.HasPrefix(tok, "-")
}

// sessions are the session ids tok may name; a client's name (a tty)
// names its session, which may be any.
func (s Server) sessions(tok *string, exact bool) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Panes {
		switch {
		case tok == nil, strings.Contains(*tok, "/"), strings.HasPrefix(*tok, "client-"),
			*tok == p.Session, nameMatch(*tok, p.SessionName, exact):
			out[p.Session] = true
		}
	}
	return out
}

// windows are the window ids tok may name in the sessions in (a window id
// anywhere).
func (s Server) windows(in map[string]bool, tok *string, exact bool) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Panes {
		switch {
		case tok != nil && *tok == p.Window:
			out[p.Window] = true
		case !in[p.Session]:
		case tok == nil, special(*tok), *tok == p.WindowIndex, nameMatch(*tok, p.WindowName, exact):
			out[p.Window] = true
		}
	}
	return out
}

// panes are the pane ids tok may name in the windows wins (a pane id
// anywhere).
func (s Server) panes(wins map[string]bool, tok string) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Panes {
		switch {
		case tok == p.ID:
			out[p.ID] = true
		case !wins[p.Window]:
		case special(tok), tok == p.Index:
			out[p.ID] = true
		}
	}
	return out
}

// panesOf lists the panes whose session, window or own id is in set.
func (s Server) panesOf(set map[string]bool) []string {
	var out []string
	for _, p := range s.Panes {
		if set[p.Session] || set[p.Window] || set[p.ID] {
			out = append(out, p.ID)
		}
	}
	return out
}

// of maps panes (by id) to what holds them: their window or session.
func (s Server) of(ids map[string]bool, holder func(Pane) string) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Panes {
		if ids[p.ID] || ids[p.Window] {
			out[holder(p)] = true
		}
	}
	return out
}

// sessionTarget: the sessions kill-session -t t may end.
func (s Server) sessionTarget(t string) map[string]bool {
	tg := splitTarget(t, "session")
	if tg.session != nil {
		return s.sessions(tg.session, tg.exactSession)
	}
	// A window or a pane names its session (any that holds it).
	return s.of(s.windowTarget(t), func(p Pane) string { return p.Session })
}

// windowTarget: the windows kill-window -t t may end.
func (s Server) windowTarget(t string) map[string]bool {
	tg := splitTarget(t, "window")
	in := s.sessions(nil, false)
	if tg.session != nil {
		in = s.sessions(tg.session, tg.exactSession)
	}
	if tg.pane != nil && tg.window == nil {
		return s.of(s.panes(s.windows(in, nil, false), *tg.pane), func(p Pane) string { return p.Window })
	}
	wins := s.windows(in, tg.window, tg.exactWindow)
	if tg.session == nil && tg.window != nil {
		// tmux tries a window it does not find as a session's name: that
		// session's current window, which may be any of its windows.
		for w := range s.windows(s.sessions(tg.window, tg.exactWindow), nil, false) {
			wins[w] = true
		}
	}
	return wins
}

// paneTarget: the panes kill-pane -t t may end.
func (s Server) paneTarget(t string) map[string]bool {
	tg := splitTarget(t, "pane")
	in := s.sessions(nil, false)
	if tg.session != nil {
		in = s.sessions(tg.session, tg.exactSession)
	}
	wins := s.windows(in, tg.window, tg.exactWindow)
	if tg.pane == nil {
		// The window's active pane, which may be any of its panes.
		return s.panes(wins, "!")
	}
	out := s.panes(wins, *tg.pane)
	if tg.session == nil && tg.window == nil && !strings.HasPrefix(*tg.pane, "%") {
		// tmux tries a pane it does not find as a window, then as a
		// session: its active pane, which may be any of its panes.
		for p := range s.panes(s.windowTarget(*tg.pane), "!") {
			out[p] = true
		}
	}
	return out
}
