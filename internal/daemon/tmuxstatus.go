package daemon

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/attention"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// TmuxStatusMark is the file (in ST_HOME) that says st setup
// --tmux-status put st's segment on the tmux status line: the daemon
// puts it back on a tmux server that lost it (a restart of tmux), and st
// setup --undo removes the file with the segment.
const TmuxStatusMark = "tmux-status"

// statusEvery is how often the daemon looks again at the status line
// with nothing changed (a tmux server restarted meanwhile).
const statusEvery = 30 * time.Second

// keepStatus keeps tmux's @st_attention at the open count, each time kick
// says it changed, and st's segment in status-right while the mark is
// there. It ends with ctx.
func keepStatus(ctx context.Context, home string, tm *tmux.Client, count func() int, kick <-chan struct{}, log io.Writer) {
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	last := -1
	for {
		n := count()
		if n != last {
			if err := tm.SetGlobalOption(ctx, attention.StatusOption, strconv.Itoa(n)); err == nil {
				last = n
				tm.RefreshStatus(ctx)
			}
		}
		if _, err := os.Stat(filepath.Join(home, TmuxStatusMark)); err == nil {
			if cur, err := tm.GlobalOption(ctx, "status-right"); err == nil && !attention.HasSegment(cur) {
				tm.SetGlobalOption(ctx, "status-right", attention.WithSegment(cur))
				last = -1 // (a new server: set the count again)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			io.WriteString(log, "tmux status: "+err.Error()+"\n")
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
			last = -1
		}
	}
}

// tmuxStatus is st setup --tmux-status (on) and its undo (off): the mark
// kept in ST_HOME, and the segment put on or taken off status-right of
// the server st drives now.
func (s *server) tmuxStatus(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.TmuxStatusRequest](b)
	if err != nil {
		return nil, err
	}
	mark := filepath.Join(s.info.Home, TmuxStatusMark)
	cur, err := s.tmux.GlobalOption(ctx, "status-right")
	if err != nil {
		return nil, &api.Error{Kind: api.KindInternal, Message: "read tmux's status-right: " + err.Error(), Hint: "start tmux, then try again"}
	}
	want := attention.WithoutSegment(cur)
	if req.On {
		want = attention.WithSegment(cur)
		if err := store.WriteFile(mark, []byte("on\n"), 0o600); err != nil {
			return nil, store.HomeWriteError(s.info.Home, "keep the tmux status setting", err)
		}
	} else if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, store.HomeWriteError(s.info.Home, "remove the tmux status setting", err)
	}
	out := &api.TmuxStatus{On: req.On, Changed: want != cur, StatusRight: want, Socket: s.tmux.Socket()}
	if out.Changed {
		if err := s.tmux.SetGlobalOption(ctx, "status-right", want); err != nil {
			return nil, &api.Error{Kind: api.KindInternal, Message: "set tmux's status-right: " + err.Error(), Hint: "start tmux, then try again"}
		}
		s.tmux.RefreshStatus(ctx)
	}
	return out, nil
}
