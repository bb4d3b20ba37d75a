package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/authz"
	"github.com/sophonz/st/internal/history"
	"github.com/sophonz/st/internal/orch"
)

// The runs that are over live on disk, in st's history (internal/history:
// the manager puts them there at its start). These handlers answer from
// it what the manager no longer has in memory: st orch show RUN, st
// worker read of such a run's worker, st worker list --all; and st orch
// prune takes old ones away.

// openHistory is home's history. One that cannot be read leaves every
// run in memory, as before there was a history, and says so.
func openHistory(home string, logf func(string, ...any)) *history.Book {
	b, err := history.Open(home)
	if err != nil {
		logf("%v: every run is read at the start (Try: check the file's mode, or move it aside)", err)
		return nil
	}
	return b
}

// notFound: the manager has no such run or worker.
func notFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindNotFound
}

func (s *server) orchShow(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.IDRequest](b)
	if err != nil {
		return nil, err
	}
	v, err := s.mgr.Show(ctx, req.Pane, req.ID)
	if req.ID != "" && notFound(err) && s.hist.Has(req.ID) {
		run, herr := s.hist.Run(req.ID)
		if herr != nil {
			return nil, herr
		}
		return history.View(run, time.Now()), nil
	}
	return v, err
}

func (s *server) workerRead(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.IDRequest](b)
	if err != nil {
		return nil, err
	}
	v, err := s.mgr.Read(ctx, req)
	if !notFound(err) || s.hist.Len() == 0 {
		return v, err
	}
	w, run, herr := s.hist.FindWorker(req.ID)
	if herr != nil {
		return nil, herr
	}
	if w == nil {
		return v, err // the manager's own word: no such worker
	}
	hv := history.WorkerView(w, run, time.Now())
	return &hv, nil
}

// workerOp is the handler of an operation on one worker (send, stop,
// rename, release, diff, merge, pick). For a worker of a finished run,
// which only the history keeps, it answers as st worker read shows it:
// its run finished, and read shows its report (the manager alone would
// say it is not a worker).
func workerOp[R any](op func(*orch.Manager, context.Context, api.IDRequest) (R, error)) handler {
	return func(s *server, ctx context.Context, r *http.Request, b []byte) (any, error) {
		req, err := decode[api.IDRequest](b)
		if err != nil {
			return nil, err
		}
		v, err := op(s.mgr, ctx, req)
		if !notFound(err) || s.hist.Len() == 0 {
			return v, err
		}
		if w, run, herr := s.hist.FindWorker(req.ID); herr == nil && w != nil {
			return nil, &api.Error{Kind: api.KindConflict,
				Message: fmt.Sprintf("worker %s (%s) is gone: its run %s finished", w.ID, w.Name, run.ID),
				Hint:    "st worker read " + req.ID + " shows its report"}
		}
		return v, err
	}
}

func (s *server) workerList(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.IDRequest](b)
	if err != nil {
		return nil, err
	}
	vs, err := s.mgr.List(ctx, req)
	if err != nil || !req.All || s.hist.Len() == 0 {
		return vs, err
	}
	runs, err := s.hist.Runs()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, run := range runs {
		for _, w := range run.Workers {
			vs = append(vs, history.WorkerView(w, run, now))
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].StartedAt.Before(vs[j].StartedAt) })
	return vs, nil
}

// orchPrune is st orch prune: with Yes a person's (authz.PruneRuns),
// without it only a look (pruneAction).
func (s *server) orchPrune(ctx context.Context, r *http.Request, b []byte) (any, error) {
	req, err := decode[api.PruneRequest](b)
	if err != nil {
		return nil, err
	}
	if req.OlderThan < 0 {
		return nil, &api.Error{Kind: api.KindUsage, Message: "--older-than must not be negative", Hint: "st orch prune --older-than 30d"}
	}
	res := &api.PruneResult{Cutoff: time.Now().Add(-req.OlderThan).UTC(), Runs: []api.PrunedRun{}}
	if s.hist == nil {
		return res, nil
	}
	old, err := s.hist.Prune(res.Cutoff, !req.Yes)
	for _, e := range old {
		res.Runs = append(res.Runs, api.PrunedRun{ID: e.ID, Objective: e.Objective, Ended: e.Ended, Workers: len(e.Workers)})
	}
	res.Removed, res.Kept = req.Yes && len(old) > 0, s.hist.Len()
	return res, err
}

// pruneAction: removing runs is a person's; looking at what would go is
// anyone's.
func pruneAction(e envelope) authz.Action {
	if e.Yes {
		return authz.PruneRuns
	}
	return authz.ReadState
}
