package api

import (
	"path/filepath"
	"time"
)

// StatusInfo is what /v1/status answers.
type StatusInfo struct {
	PID        int       `json:"pid"`
	Version    string    `json:"version"`
	Home       string    `json:"home"`
	Socket     string    `json:"socket"`
	TmuxSocket string    `json:"tmux_socket"`
	Started    time.Time `json:"started"`
	Orch       Status    `json:"orch"`
	// Commit is the commit the daemon's st was built from ("" unknown),
	// and Binary its path: st doctor compares them with its own.
	Commit string `json:"commit,omitempty"`
	Binary string `json:"binary,omitempty"`
	// Web is the web UI's address ("" when it could not listen).
	Web string `json:"web,omitempty"`
	// WebNote says why the web UI is not on the default port (it was
	// taken); WebError why there is no web UI (a port set on purpose is
	// taken), with what to do.
	WebNote  string `json:"web_note,omitempty"`
	WebError *Error `json:"web_error,omitempty"`
	// WebMoved says that the web UI is not on the port of the links st
	// made before, which open nothing now.
	WebMoved string `json:"web_moved,omitempty"`
	// LastRestore are the figures of st's last restore of the tmux server.
	LastRestore RestoreStats `json:"last_restore"`
	// TmuxDown is since when the tmux server has been gone (absent while
	// it runs); Restoring is set while st brings it back.
	TmuxDown  *time.Time `json:"tmux_down,omitempty"`
	Restoring bool       `json:"restoring,omitempty"`
	// Resuming is how many agents st is starting again after a restore.
	Resuming int `json:"resuming,omitempty"`
	// Push says that each open gate is pushed (push_url is set), and
	// PushButtons that the push carries a button per option
	// (push_answer_url is set too): st doctor says how to get them.
	Push        bool `json:"push,omitempty"`
	PushButtons bool `json:"push_buttons,omitempty"`
}

// LsSession is a session as st ls shows it.
type LsSession struct {
	ID      string     `json:"id"`
	Name    string     `json:"name"`
	Agents  int        `json:"agents"`
	Windows []LsWindow `json:"windows"`
	// Attention is how many open attention items are about the agents of
	// this session's panes.
	Attention int `json:"attention,omitempty"`
}

// LsWindow is a window as st ls shows it.
type LsWindow struct {
	ID     string   `json:"id"`
	Index  string   `json:"index"`
	Name   string   `json:"name"`
	Panes  []string `json:"panes"`
	Agents []string `json:"agents"` // "%3 sim worker" etc.
}

// SocketPath is where the daemon of home listens.
func SocketPath(home string) string { return filepath.Join(home, "st.sock") }

// LockPath is the file the daemon of home holds locked while it runs
// (st down waits for it to be free: the daemon is gone then).
func LockPath(home string) string { return filepath.Join(home, "daemon.lock") }

// PidPath is where the daemon of home writes its pid.
func PidPath(home string) string { return filepath.Join(home, "st.pid") }

// TmuxHeader carries the socket of the caller's tmux server ($TMUX), so
// that a command from a pane of another server is refused.
const TmuxHeader = "X-St-Tmux"

// IndentHeader asks the daemon to write its JSON answer indented by two
// spaces (what --json prints); the daemon sets it on an answer it
// indented, so that a client of an older daemon knows to indent itself.
const IndentHeader = "X-St-Indent"

// AcceptRemoteRequest turns accept-remote on or off (nil On: only ask).
type AcceptRemoteRequest struct {
	On   *bool  `json:"on,omitempty"`
	Pane string `json:"pane,omitempty"` // who asks ($TMUX_PANE)
}

// AcceptRemoteStatus is what st orch accept-remote prints.
type AcceptRemoteStatus struct {
	On       bool   `json:"on"`
	SignedIn bool   `json:"signed_in"`
	Machine  string `json:"machine,omitempty"`
	Account  string `json:"account,omitempty"`
	Addr     string `json:"addr,omitempty"`
}

// MachineRoute is how this machine reaches another of its account, as
// st machines shows it (RouteRemoteRoutes).
type MachineRoute struct {
	Slug  string `json:"slug"`
	Route string `json:"route"` // direct, relayed, or "" when it could not be reached
	Error string `json:"error,omitempty"`
}
