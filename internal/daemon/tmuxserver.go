package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// checkTmuxServer refuses, before anything changes, a tmux server that st
// cannot honour:
//
//   - a socket set on purpose (tmux_socket, ST_TMUX_SOCKET) whose folder
//     is not there: no server runs there, and st would make the folder and
//     start one of its own (st makes only tmux's own default folder);
//   - a server other than the one st's workers are on (the socket that
//     tmux-layout.json recorded): st would find none of its panes there,
//     take the server for its own restarted, and "restore" the sessions
//     into it, starting every agent a second time; and once set back, the
//     real server's panes, all alive, read gone.
//
// A RAIL against a mistake in the settings; the user who can write
// config.toml is the user st runs as.
func checkTmuxServer(home string, cfg Config, getenv func(string) string) error {
	setting := "tmux_socket in " + filepath.Join(home, "config.toml")
	if getenv("ST_TMUX_SOCKET") != "" {
		setting = "ST_TMUX_SOCKET"
	}
	socket := cfg.TmuxSocket
	if socket != "" {
		if !filepath.IsAbs(socket) {
			return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("%s is %q, a relative path: which server it names would depend on the folder st starts in", setting, socket),
				Hint: "give the socket's absolute path (tmux display -p '#{socket_path}' in a pane of that server prints it), or remove the setting to use tmux's default server"}
		}
		dir := filepath.Dir(socket)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return &api.Error{Kind: api.KindUsage,
				Message: fmt.Sprintf("%s names the tmux socket %s, whose folder %s does not exist: no tmux server runs there, and st does not make one in a folder of its own choosing", setting, socket, dir),
				Hint:    "give the socket of a running tmux server (tmux display -p '#{socket_path}' in a pane of it prints it), or remove the setting to use tmux's default server"}
		}
	} else {
		socket = tmux.DefaultSocket()
	}
	var pic tmux.Layout
	if err := store.ReadJSON(filepath.Join(home, "tmux-layout.json"), &pic); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil // an unreadable picture is the restorer's to report
	}
	if pic.Socket == "" || pic.Socket == socket || !holdsWorkers(pic) {
		return nil
	}
	was := "set tmux_socket (or ST_TMUX_SOCKET) back to " + pic.Socket
	if pic.Socket == tmux.DefaultSocket() {
		was = "remove " + setting + ", so that st drives tmux's default server " + pic.Socket + " again"
	}
	return &api.Error{Kind: api.KindUsage,
		Message: fmt.Sprintf("st's workers are on the tmux server at %s (st's record of it: %s), and this st is set to drive the tmux server at %s (%s): st would not find them there, and would start their agents again in that server",
			pic.Socket, filepath.Join(home, "tmux-layout.json"), socket, settingOrDefault(cfg, setting)),
		Hint: was + "; to move st to another tmux server, stop its workers first (st worker stop NAME --yes), then change the setting"}
}

// settingOrDefault says where the socket st is set to drive comes from.
func settingOrDefault(cfg Config, setting string) string {
	if cfg.TmuxSocket != "" {
		return setting
	}
	return "tmux's default server, as TMUX_TMPDIR places it"
}

// holdsWorkers reports whether a picture of the server has panes of st's
// runs in it.
func holdsWorkers(l tmux.Layout) bool {
	for _, s := range l.Sessions {
		for _, w := range s.Windows {
			for _, p := range w.Panes {
				if p.Options["@st_run"] != "" {
					return true
				}
			}
		}
	}
	return false
}
