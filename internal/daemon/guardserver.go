package daemon

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/guard"
	"github.com/sophonz/st/internal/tmux"
)

// guardServer answers the guard in an agent's PreToolUse hook, which must
// know, for a kill of a session, window, pane or pid, whether it would
// end the agent's own tmux server (its last session, its pid, its last
// pane's process). The daemon drives that server, so the hook asks it and
// runs no tmux itself. It answers only for its own server: of another,
// st knows nothing, and the guard then refuses what only the answer could
// let through.
func (s *server) guardServer(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.GuardServerRequest](b)
	if err != nil {
		return nil, err
	}
	if req.Socket == "" || !sameFile(req.Socket, s.tmux.Socket()) {
		return nil, &api.Error{Kind: api.KindUsage,
			Message: "st drives the tmux server " + s.tmux.Socket() + ", not " + strings.TrimSpace(req.Socket) + ", so it cannot tell what that one holds",
			Hint:    "name the server plainly in the command (tmux -L NAME or -S PATH), or run st for that server"}
	}
	out, err := s.tmux.Run(ctx, "list-panes", "-a", "-F", guard.PaneFormat())
	if errors.Is(err, tmux.ErrNoServer) {
		return api.GuardServer{}, nil // no server: nothing is its last
	}
	if err != nil {
		return nil, err
	}
	g := api.GuardServer{Panes: out}
	if srv, err := guard.ParseServer(out); err == nil && srv.Pid > 0 {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(srv.Pid) + "/cmdline"); err == nil {
			g.Args = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return g, nil
}
