package daemon

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/tmux"
)

// A hook event speaks only for the pane its process runs in (issue 31,
// item 1). Any process of the user may send one, and the pane it names is
// its $TMUX_PANE, which any process sets: one in another pane could post
// a resumed SessionStart with another worker's conversation id for a pane
// it does not run in. So st takes an event about pane P only from a
// process whose parents include P's first process, as tmux says it now
// (the agents' hooks are children of the agent, which is that process or
// under it; Codex with --no-daemon runs them in-process, the sim as its
// child; a Claude teammate runs in its own pane with its own hooks). A
// pane st cannot find (gone, of a server st has not read, or with no
// process) refuses the event: it fails closed. What the pane's agent
// process was started to resume is read here too, from its command line,
// for orch to move a worker's relations only on that proof.
//
// Against a process of another pane this is a boundary as far as /proc
// and tmux tell the truth; a same-user process that drives tmux itself,
// ptraces another, or names itself after an agent goes around it, so
// against a same-user agent with a shell it is a rail (docs/security.md).

// hookSender is what /proc tells of the process that sent a hook event
// about a pane whose first process is panePID.
type hookSender struct {
	inPane bool // panePID is among its parents (or is it)
	// resumed is the conversation the pane's agent (a process of the
	// event's agent kind, between the sender and the pane's first process)
	// was started to resume.
	resumed string
}

// readHookSender walks the parents of pid up to panePID.
func readHookSender(p procFS, pid, panePID int, kind string, extra map[string]string) (hookSender, []int) {
	var hs hookSender
	var chain []int
	if pid <= 0 {
		return hs, nil
	}
	cur, err := p.info(pid)
	for i := 0; err == nil && i < 64 && cur.pid > 1; i++ {
		chain = append(chain, cur.pid)
		if cur.pid != pid && hs.resumed == "" && agentProgram(cur.argv, extra) == kind {
			hs.resumed = agent.ResumedSession(kind, cur.argv)
		}
		if panePID > 0 && cur.pid == panePID {
			hs.inPane = true
			return hs, chain
		}
		cur, err = p.info(cur.ppid)
	}
	hs.resumed = "" // an agent outside the pane proves nothing of it
	return hs, chain
}

// hookOrigin checks the sender of a hook event against the pane it
// names, and says what orch may take from it.
func (s *server) hookOrigin(ctx context.Context, r *http.Request, req api.HookRequest) (orch.HookOrigin, error) {
	if !tmux.ValidPaneID(req.Pane) {
		return orch.HookOrigin{}, nil // about no pane: orch takes nothing from it
	}
	peer, _ := r.Context().Value(ctxKey{}).(sockPeer)
	panePID := s.panePID(ctx, req.Pane)
	hs, chain := readHookSender(s.proc, peer.pid, panePID, req.Agent, agentBins())
	if hs.inPane {
		return orch.HookOrigin{Resumed: hs.resumed}, nil
	}
	from := "no pane of st's tmux server"
	if p := s.paneOf(ctx, chain, ""); p != "" {
		from = "pane " + p
	}
	why := fmt.Sprintf("a %s hook event (%s) about pane %s came from %s (pid %d), not from a process in %s",
		plainWord(req.Agent), plainWord(req.Event), req.Pane, from, peer.pid, req.Pane)
	if panePID == 0 {
		why = fmt.Sprintf("a %s hook event (%s) about pane %s, which st cannot find on its tmux server, came from %s (pid %d)",
			plainWord(req.Agent), plainWord(req.Event), req.Pane, from, peer.pid)
	}
	s.logf("refused %s", why)
	return orch.HookOrigin{}, forbidden{&api.Error{Kind: "forbidden", Message: "refused: " + why,
		Hint: "a hook speaks for its own pane only: run it from the agent in that pane, with $TMUX_PANE as tmux set it"}}
}

// plainWord is a word of a request as the log may print it: at most 40
// bytes of letters, digits and a few marks.
func plainWord(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '?'
		}
	}
	return string(b)
}

// logf writes a line to the daemon's log.
func (s *server) logf(format string, args ...any) {
	if s.log == nil {
		return
	}
	fmt.Fprintf(s.log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
