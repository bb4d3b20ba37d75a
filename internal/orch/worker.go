package orch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/tmux"
	"github.com/sophonz/st/internal/worktree"
)

// Default limits of a start (the spec's figures).
const (
	DefaultBlockedTimeout = 90 * time.Second
	DefaultHookTimeout    = 30 * time.Second
	// sendTimeout is how long st worker send waits for a prompt on the
	// worker's screen to be answered before it gives up.
	sendTimeout = 10 * time.Second
)

// TaskLine is the one line st types into a new worker. It names the task
// file by its absolute path and st by its absolute path, because an
// agent's shell may not find st on its PATH. It never starts with / or $.
func TaskLine(stBin, task string) string {
	return fmt.Sprintf("Your task is in the file %s - read it and do it. When you have finished, report with: %s worker done --summary \"<what you did, and how you checked it>\"", task, stBin)
}

// placement finds the run and level of a new worker started by pane p,
// making a run when the pane has none. Called with m.mu held.
func (m *Manager) placement(p tmux.Pane) (r *Run, level int, created bool, err error) {
	return m.placementIn(p, nil)
}

// placementIn is placement with the run fixed (a task's). Called with m.mu held.
func (m *Manager) placementIn(p tmux.Pane, fixed *Run) (r *Run, level int, created bool, err error) {
	if fixed != nil && fixed.Coordinator == p.ID {
		return fixed, 1, false, nil
	}
	if err := m.checkChain(p.ID, 0, "a new worker"); err != nil {
		return nil, 0, false, err
	}
	if w := m.workers[p.ID]; w != nil && w.State.Live() {
		r = m.runOf[p.ID]
		if w.Level+1 > MaxLevel {
			return nil, 0, false, errorf(KindDepth, "do this part yourself, or hand it back to "+w.Parent+" to start",
				"refused: a worker may start workers at most %d levels below its run's coordinator, and this pane is already %d levels down (%s)",
				MaxLevel, w.Level, m.chain(w))
		}
		return r, w.Level + 1, false, nil
	}
	if r = m.currentRun(p.ID); r != nil {
		return r, 1, false, nil
	}
	return m.newRun(p, ""), 1, true, nil
}

// reserve places a new worker called name for pane p (in run fixed when
// given, or where a remote start puts it) and holds its name until
// release, so that two starts cannot take one name. A run made for it is
// saved.
func (m *Manager) reserve(p tmux.Pane, fixed *Run, remote *remotePlace, name string) (r *Run, level int, created bool, release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if remote != nil {
		r, level = remote.run, remote.level
	} else if r, level, created, err = m.placementIn(p, fixed); err != nil {
		return nil, 0, false, nil, err
	}
	key := r.ID + "/" + name
	taken := m.reserved[key]
	for _, w := range r.Workers {
		if w.Name == name && w.State.Live() {
			taken = true
		}
	}
	if taken {
		if created {
			delete(m.runs, r.ID)
		}
		return nil, 0, false, nil, errorf(KindConflict, "pick another --name", "run %s already has a worker named %q", r.ID, name)
	}
	if created {
		if err := m.save(r); err != nil {
			delete(m.runs, r.ID)
			return nil, 0, false, nil, err
		}
	}
	m.reserved[key] = true
	return r, level, created, func() {
		m.mu.Lock()
		delete(m.reserved, key)
		m.mu.Unlock()
	}, nil
}

// chain spells the line of panes from a run's coordinator to w.
func (m *Manager) chain(w *Worker) string {
	parts := []string{w.ID}
	cur := w
	for i := 0; i < 8 && cur != nil; i++ {
		parts = append([]string{cur.Parent}, parts...)
		cur = m.workers[cur.Parent]
		if cur != nil && m.runOf[cur.ID] != m.runOf[w.ID] {
			break
		}
	}
	return strings.Join(parts, " → ")
}

// StartWorker opens a window, starts the agent, types its task and returns
// once the agent's hook shows that its turn started.
func (m *Manager) StartWorker(ctx context.Context, req StartRequest) (*WorkerView, error) {
	ad, err := agent.Lookup(req.Agent)
	if err != nil {
		return nil, errorf(KindUsage, "--agent "+strings.Join(agent.Kinds(), "|"), "%v", err)
	}
	if !filepath.IsAbs(req.Task) {
		return nil, errorf(KindUsage, "give the task file's path", "the task file must be an absolute path, not %q", req.Task)
	}
	if fi, err := os.Stat(req.Task); err != nil || fi.IsDir() {
		return nil, errorf(KindUsage, "write the task into a file and pass its path with --task", "cannot read the task file %s: %v", req.Task, errNotFile(err))
	}
	name := req.Name
	if name == "" {
		name = NameFromTask(req.Task)
	} else if !ValidName(name) {
		return nil, errorf(KindUsage, "use letters, digits, '.', '_' and '-' (at most 40), e.g. --name api-tests",
			"the name %q has characters that tmux or a shell would misread", name)
	}
	line := TaskLine(m.cfg.STBin, req.Task)
	if len(line) >= 1000 {
		return nil, errorf(KindUsage, "move the task file to a shorter path", "the task file's path is too long to type (the line would be %d characters; agents take under 1000)", len(line))
	}
	if err := checkLine(line); err != nil {
		return nil, errorf(KindUsage, "rename the task file without line breaks or control characters", "the task file's path cannot be typed as one line: %v", err)
	}
	if req.Machine != "" {
		task, err := os.ReadFile(req.Task)
		if err != nil {
			return nil, errorf(KindUsage, "write the task into a file and pass its path with --task", "cannot read the task file %s: %v", req.Task, err)
		}
		return m.startRemote(ctx, req, task, name)
	}
	var p tmux.Pane
	if req.remote != nil {
		p = req.remote.pane
	} else if p, err = m.callerPane(ctx, req.Pane); err != nil {
		return nil, err
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = p.Path
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return nil, errorf(KindUsage, "pass an existing folder with --cwd", "the worker's folder %s does not exist", cwd)
	}

	// The agent's version, before anything opens: one that lacks what st
	// needs is refused; one st was not tested on goes on, with a note.
	ver := agent.Check(ctx, ad.Kind(), launchOptions(ad.Kind(), m.cfg.STBin, name, req.Env).Program,
		withDir(filepath.Dir(m.cfg.STBin), req.Env["PATH"]))
	if ver.Refused() {
		return nil, errorf(KindUsage, ver.Hint, "%s", ver.Note)
	}

	// Place the worker and reserve its name before opening anything, so
	// that two starts cannot take one name.
	var fixed *remotePlace
	if req.remote != nil {
		fixed = req.remote
	}
	r, level, created, release, err := m.reserve(p, req.run, fixed, name)
	if err != nil {
		return nil, err
	}
	defer release()
	if created {
		m.cfg.Tmux.SetOption(ctx, p.ID, "@st_run", r.ID)
		m.cfg.Tmux.SetOption(ctx, p.ID, "@st_role", "coordinator")
	}

	wcwd, scope, wt, notes, undoTree, err := m.prepareTree(req, r, name, cwd)
	if err != nil {
		if created {
			m.mu.Lock()
			if len(r.Workers) == 0 && len(r.Tasks) == 0 {
				delete(m.runs, r.ID)
			}
			m.mu.Unlock()
		}
		return nil, err
	}
	cwd = wcwd
	env := map[string]string{"ST_HOME": m.cfg.Home, "ST_BIN": m.cfg.STBin}
	for k, v := range req.Env {
		env[k] = v
	}
	env["PATH"] = withDir(filepath.Dir(m.cfg.STBin), env["PATH"])
	target := p.SessionID
	if req.Split {
		target = p.ID
	}
	wp, err := m.cfg.Tmux.NewWindow(ctx, tmux.NewWindowOpts{
		Target: target, Name: name, Cwd: cwd, Env: env, Split: req.Split,
		Command: ad.Command(launchOptions(ad.Kind(), m.cfg.STBin, name, env)),
	})
	if err != nil {
		undoTree()
		return nil, errorf(KindInternal, "check that the coordinator's session still exists", "%v", err)
	}
	// The relations on the pane are how st knows it after a restart of
	// st: a worker whose pane lacks them would count as gone. So a failed
	// try (a busy server) is tried again.
	rel := map[string]map[string]string{wp.ID: {"@st_run": r.ID, "@st_role": "worker", "@st_parent": p.ID, "@st_name": name}}
	for try := 0; try < 3; try++ {
		err := m.cfg.Tmux.SetOptions(ctx, rel)
		if err == nil {
			break
		}
		m.logf("worker %s: keep its relations on the pane (try %d): %v", wp.ID, try+1, err)
	}
	// The worker starts once its pane carries them: a reconcile that
	// listed the panes before then (it skips workers started after its
	// listing) would see a pane of no run and call the worker gone.
	now := m.cfg.Now()
	w := &Worker{
		ID: wp.ID, Name: name, Agent: ad.Kind(), Parent: p.ID, Level: level, State: Starting, Since: now,
		Task: req.Task, Cwd: cwd, Window: wp.WindowID, Session: wp.SessionID, StartedAt: now,
		Scope: scope, Worktree: wt, Fan: req.fanGroup,
	}
	if req.remote != nil {
		w.Ref = req.remote.ref
	}
	m.mu.Lock()
	r.Workers = append(r.Workers, w)
	m.workers[w.ID] = w
	m.runOf[w.ID] = r
	if err := m.save(r); err != nil {
		m.mu.Unlock()
		m.cfg.Tmux.KillPane(ctx, wp.ID)
		return nil, err
	}
	m.notify()
	m.mu.Unlock()
	m.kickWatch() // keep the new window in st's picture of the server
	m.logf("worker %s (%s) of run %s opened for %s", w.ID, name, r.ID, p.ID)

	d := delivery{
		pane: w.ID, adapter: ad, text: line, fresh: true,
		blockedTimeout: orDefault(req.BlockedTimeout, DefaultBlockedTimeout),
		hookTimeout:    orDefault(req.HookTimeout, DefaultHookTimeout),
		onBlocked: func(s agent.Screen) {
			m.mu.Lock()
			if m.setState(w, Blocked) {
				m.save(r)
				m.notify()
			}
			m.mu.Unlock()
		},
	}
	if err := m.deliver(ctx, &d); err != nil {
		m.mu.Lock()
		var oe *Error
		if errors.As(err, &oe) && oe.Kind == KindBlocked {
			w.Error = oe.Message
		} else {
			w.Error = err.Error()
			m.setState(w, Failed)
		}
		m.save(r)
		m.notify()
		m.mu.Unlock()
		if oe != nil {
			oe.Message = fmt.Sprintf("worker %s (%s): %s", w.ID, name, oe.Message)
			return nil, oe
		}
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.State == Starting || w.State == Blocked {
		m.setState(w, Working)
		m.save(r)
		m.notify()
	}
	v := m.view(w)
	v.Notes = notes
	if n := ver.Line(); n != "" {
		v.Notes = append(v.Notes, n)
	}
	return &v, nil
}

// launchOptions reads an agent's launch settings from the caller's
// environment (then the daemon's): ST_CLAUDE_BIN, ST_CODEX_BIN,
// ST_CLAUDE_PERMISSION_MODE, ST_CODEX_NETWORK=1.
func launchOptions(kind, stBin, name string, env map[string]string) agent.LaunchOptions {
	get := func(k string) string {
		if v := env[k]; v != "" {
			return v
		}
		return os.Getenv(k)
	}
	return agent.LaunchOptions{
		STBin: stBin, Name: name,
		Program:        get("ST_" + strings.ToUpper(kind) + "_BIN"),
		Path:           get("PATH"),
		PermissionMode: get("ST_CLAUDE_PERMISSION_MODE"),
		NetworkAccess:  get("ST_CODEX_NETWORK") == "1",
	}
}

func errNotFile(err error) error {
	if err == nil {
		return errors.New("it is a folder")
	}
	if errors.Is(err, os.ErrNotExist) {
		return errors.New("no such file")
	}
	return err
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// withDir puts dir first on a PATH value (the daemon's PATH when empty).
func withDir(dir, path string) string {
	if path == "" {
		path = os.Getenv("PATH")
	}
	for _, p := range filepath.SplitList(path) {
		if p == dir {
			return path
		}
	}
	return dir + string(filepath.ListSeparator) + path
}

// Hook applies one hook event from an agent's pane, and says whether a
// tool call about to run must be refused (outside the worker's scope).
func (m *Manager) Hook(ctx context.Context, req HookRequest) (*HookResponse, error) {
	ad, err := agent.Lookup(req.Agent)
	if err != nil {
		return nil, errorf(KindUsage, "", "%v", err)
	}
	ev, err := ad.MapEvent(req.Event, req.Payload)
	if err != nil {
		return nil, errorf(KindUsage, "", "hook %s %s: %v", req.Agent, req.Event, err)
	}
	if !tmux.ValidPaneID(req.Pane) {
		return &HookResponse{}, nil // an agent outside tmux: nothing st drives
	}
	m.mu.Lock()
	if old := m.movedAgent(req.Pane, ev.SessionID); old != "" {
		m.logf("the agent of %s (conversation %s) is back in %s: moving its relations", old, ev.SessionID, req.Pane)
		opts := m.paneOptions(old)
		m.mu.Unlock()
		m.relink(ctx, map[string]string{old: req.Pane}, map[string]map[string]string{req.Pane: opts}, false)
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	pi := m.panes[req.Pane]
	newAgent := pi == nil || pi.agent != ad.Kind() || (ev.SessionID != "" && pi.session != ev.SessionID)
	if pi == nil {
		pi = &paneInfo{}
		m.panes[req.Pane] = pi
	}
	pi.agent = ad.Kind()
	pi.seq++
	pi.lastEvent = m.cfg.Now()
	pi.quietReady = 0
	if ev.SessionID != "" {
		pi.session = ev.SessionID
	}
	if newAgent {
		// Kept on the pane, so st still knows an agent runs there after a
		// restart of st, and so that a tmux restart can resume it.
		go func(pane, kind, sess string) {
			o := map[string]string{"@st_agent": kind}
			if sess != "" {
				o["@st_agent_session"] = sess
			}
			m.cfg.Tmux.SetOptions(context.Background(), map[string]map[string]string{pane: o})
			m.kickWatch()
		}(req.Pane, ad.Kind(), pi.session)
	}
	pi.waiting = ev.Kind == agent.EvWaiting || (pi.waiting && (ev.Kind == agent.EvSubagent || ev.Kind == agent.EvIgnore))
	switch ev.Kind {
	case agent.EvTurnStart, agent.EvTool, agent.EvWaiting:
		if ev.Kind == agent.EvTurnStart {
			pi.turnSeq = pi.seq
		}
		pi.inTurn = true
	case agent.EvTurnEnd, agent.EvInterrupt, agent.EvSessionStart, agent.EvSessionEnd:
		pi.inTurn = false
	case agent.EvSubagent:
		if pi.subagents == nil {
			pi.subagents = map[string]*Subagent{}
		}
		st := "working"
		if ev.SubagentDone {
			st = "done"
		}
		pi.subagents[ev.SubagentID] = &Subagent{ID: ev.SubagentID, Type: ev.SubagentType, State: st, Since: m.cfg.Now()}
	}
	w := m.workers[req.Pane]
	res := &HookResponse{}
	if w != nil && w.State.Live() {
		if reason := checkScope(w, ev); reason != "" {
			m.logf("worker %s: refused a %s call outside its scope", w.ID, ev.Tool)
			return &HookResponse{Deny: true, Reason: reason}, nil
		}
	}
	if w != nil && w.State.Live() {
		r := m.runOf[w.ID]
		if ev.SessionID != "" {
			w.AgentSession = ev.SessionID
		}
		changed := false
		switch ev.Kind {
		case agent.EvTurnStart:
			w.Reported = false
			changed = m.setState(w, Working)
		case agent.EvTool:
			if w.State != Done {
				changed = m.setState(w, Working)
			}
		case agent.EvWaiting:
			changed = m.setState(w, Waiting)
		case agent.EvTurnEnd:
			w.LastAnswer = ev.LastAnswer
			changed = true
			if w.Reported {
				m.setState(w, Done)
			} else {
				m.setState(w, Idle)
			}
		case agent.EvInterrupt:
			changed = m.setState(w, Idle)
		case agent.EvSessionEnd:
			// The agent exited: its pane closing, or the whole tmux server
			// going down (then st brings it back). The watcher tells which.
			m.kickWatch()
		}
		if changed {
			m.save(r)
		}
	}
	m.notify()
	m.notices.kick(req.Pane)
	return res, nil
}

// Done records a worker's report, on disk before it returns.
func (m *Manager) Done(ctx context.Context, req DoneRequest) (*WorkerView, error) {
	if strings.TrimSpace(req.Summary) == "" {
		return nil, errorf(KindUsage, `st worker done --summary "<what you did, and how you checked it>"`, "the report needs a summary")
	}
	if err := checkText("summary", req.Summary); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.workers[req.Pane]
	if w == nil || (!w.State.Live() && w.State != Failed) {
		return nil, errorf(KindNotFound, "run st worker done in the pane of a worker that st started or adopted",
			"pane %s is not a worker of any run", orNone(req.Pane))
	}
	r := m.runOf[w.ID]
	now := m.cfg.Now()
	old := *w
	w.Summary = req.Summary
	w.ReportedAt = &now
	w.Reported = true
	w.Told = false
	w.Error = ""
	// On disk first, and only then the consequences (the coordinator's
	// notice, dependent tasks): a report that could not be kept must not
	// tell anyone it was made.
	w.State, w.Since = Done, now
	if err := m.save(r); err != nil {
		*w = old
		return nil, err
	}
	if old.State != Done {
		w.State = old.State
		m.setState(w, Done)
		if len(r.Tasks) > 0 {
			m.save(r) // what the report moved in the run's tasks
		}
	}
	m.notify()
	v := m.view(w)
	return &v, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Wait blocks until every named worker (or every worker of the pane)
// has settled, or the timeout passes. Hook events wake it at once.
func (m *Manager) Wait(ctx context.Context, req WaitRequest) (*WaitResult, error) {
	// Ids of workers on other machines name this machine's records of them.
	remote := map[string]*Worker{}
	ids := append([]string(nil), req.IDs...)
	for i, id := range ids {
		if !isRemotePane(id) {
			continue
		}
		_, _, _, w, local, err := m.remoteTarget(ctx, id)
		if err != nil {
			return nil, err
		}
		if local != "" { // it named this machine
			ids[i] = local
			continue
		}
		if w == nil {
			return nil, errorf(KindNotFound, "st worker list --all shows the workers this machine's runs have elsewhere",
				"%s is not a worker of any run on this machine (it may work for another machine)", id)
		}
		remote[id] = w
	}
	m.mu.Lock()
	var ws []*Worker
	if len(req.IDs) == 0 {
		if req.Pane == "" {
			m.mu.Unlock()
			return nil, errorf(KindUsage, "name the workers, or run it in the coordinator's pane", "st worker wait with no ids waits for this pane's workers, and there is no pane ($TMUX_PANE is empty)")
		}
		for _, w := range m.workers {
			if w.Parent == req.Pane && (w.State.Live() || !w.Told) {
				ws = append(ws, w)
			}
		}
		if len(ws) == 0 {
			m.mu.Unlock()
			return nil, errorf(KindNotFound, "st worker start --agent AGENT --task FILE starts one", "pane %s has no workers to wait for", req.Pane)
		}
	} else {
		for _, id := range ids {
			if w := remote[id]; w != nil {
				ws = append(ws, w)
				continue
			}
			w, err := m.resolve(req.Pane, id)
			if err != nil {
				m.mu.Unlock()
				return nil, err
			}
			ws = append(ws, w)
		}
	}
	m.mu.Unlock()
	sort.Slice(ws, func(i, j int) bool { return ws[i].StartedAt.Before(ws[j].StartedAt) })

	var deadline <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		m.mu.Lock()
		all := true
		for _, w := range ws {
			if !w.State.Settled() {
				all = false
			}
		}
		ch := m.changed
		if all {
			res := m.waitResult(req.Pane, ws, false)
			m.mu.Unlock()
			return res, nil
		}
		m.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			m.mu.Lock()
			res := m.waitResult(req.Pane, ws, true)
			m.mu.Unlock()
			return res, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitResult builds the answer and marks reports the caller has now seen.
func (m *Manager) waitResult(caller string, ws []*Worker, timedOut bool) *WaitResult {
	res := &WaitResult{TimedOut: timedOut}
	for _, w := range ws {
		if w.State == Done && w.Parent == caller && !w.Told {
			w.Told = true
			m.save(m.runOf[w.ID])
		}
		res.Workers = append(res.Workers, m.view(w))
	}
	return res
}

// Read returns a worker's record: its summary and last answer. A worker
// reports before its turn ends, so a read right after the report waits a
// few seconds for the turn's last answer.
func (m *Manager) Read(ctx context.Context, req IDRequest) (*WorkerView, error) {
	if isRemotePane(req.ID) {
		return m.remoteOp(ctx, "read", req)
	}
	deadline := time.NewTimer(m.cfg.ReadWait)
	defer deadline.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := m.resolve(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	for waiting := true; waiting && w.State == Done && m.panes[w.ID] != nil && m.panes[w.ID].inTurn; {
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
		m.mu.Lock()
	}
	if w.Parent == req.Pane && w.State == Done && !w.Told {
		w.Told = true
		m.save(m.runOf[w.ID])
	}
	v := m.view(w)
	return &v, nil
}

// DefaultReadWait bounds how long st worker read waits for a reporting
// worker's turn to end.
const DefaultReadWait = 5 * time.Second

// List returns the calling pane's workers, or with all every worker.
// It looks at tmux first, so a pane that just closed shows as such.
func (m *Manager) List(ctx context.Context, req IDRequest) ([]WorkerView, error) {
	m.reconcile(ctx)
	out := m.listViews(req)
	// Workers here of coordinators on other machines: ask those machines
	// whether the coordinators are still where st thinks.
	m.remoteParentsNow(ctx, out)
	return out, nil
}

func (m *Manager) listViews(req IDRequest) []WorkerView {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []WorkerView
	for _, w := range m.workers {
		if req.All || w.Parent == req.Pane {
			if !req.All && !w.State.Live() && w.Told {
				// A pane's list keeps what it still has to look at.
				continue
			}
			out = append(out, m.view(w))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Send types a line into a worker, under the same delivery rules as its task.
func (m *Manager) Send(ctx context.Context, req IDRequest) (*WorkerView, error) {
	if isRemotePane(req.ID) {
		return m.remoteOp(ctx, "send", req)
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, errorf(KindUsage, `st worker send ID "TEXT"`, "nothing to send")
	}
	if err := checkLine(req.Text); err != nil {
		return nil, err
	}
	m.mu.Lock()
	w, err := m.resolve(req.Pane, req.ID)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if !w.State.Live() {
		m.mu.Unlock()
		return nil, errorf(KindConflict, "st worker list shows which workers are alive", "worker %s (%s) is %s", w.ID, w.Name, w.State)
	}
	ad, _ := agent.Lookup(w.Agent)
	id := w.ID
	m.mu.Unlock()
	d := delivery{pane: id, adapter: ad, text: req.Text, whileWorking: true, blockedTimeout: sendTimeout, hookTimeout: DefaultHookTimeout}
	if err := m.deliver(ctx, &d); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.view(w)
	return &v, nil
}

// checkText refuses control characters other than line breaks and tabs in
// text that st keeps and prints later (a summary, an objective, a gate's
// question): printed raw, an escape sequence would act on the reader's
// terminal (clear it, retitle it, write its clipboard).
func checkText(what, s string) error {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return errorf(KindUsage, "remove control characters and escape sequences from the "+what,
				"the %s has a control character (%U), which would act on the terminal of whoever reads it", what, r)
		}
	}
	return nil
}

// checkLine refuses text that an agent would not take as a plain line.
func checkLine(s string) error {
	if strings.ContainsAny(s, "\r\n") {
		return errorf(KindUsage, "send one line; put longer text in a file and send its path", "the text has a line break, which would submit it early")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return errorf(KindUsage, "remove control characters from the text", "the text has a control character (%U), which an agent would take as a key", r)
		}
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "$") {
		return errorf(KindUsage, "start the line with a word", "a line starting with %q opens the agent's command menu", s[:1])
	}
	if len(s) >= 1000 {
		return errorf(KindUsage, "put longer text in a file and send its path", "the text is %d characters; agents take a line under 1000", len(s))
	}
	return nil
}

// Stop closes a worker's pane.
func (m *Manager) Stop(ctx context.Context, req IDRequest) (*WorkerView, error) {
	if isRemotePane(req.ID) {
		return m.remoteOp(ctx, "stop", req)
	}
	m.mu.Lock()
	w, err := m.resolve(req.Pane, req.ID)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	id := w.ID
	m.mu.Unlock()
	if err := m.cfg.Tmux.KillPane(ctx, id); err != nil && !errors.Is(err, tmux.ErrNoPane) {
		return nil, errorf(KindInternal, "", "%v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setState(w, Gone)
	var notes []string
	if wt := w.Worktree; wt != nil && wt.Path != "" {
		if wt.Merged {
			// Its work is in the coordinator's checkout now.
			repo := &worktree.Repo{Root: wt.Root}
			tree := wt.Worktree
			if err := repo.Remove(&tree, true); err != nil {
				notes = append(notes, "its worktree could not be removed: "+err.Error())
			} else {
				notes = append(notes, "removed its worktree "+wt.Path+" and branch "+wt.Branch)
				wt.Path = ""
			}
		} else {
			notes = append(notes, "its worktree "+wt.Path+" (branch "+wt.Branch+") is kept, since it was not merged")
		}
	}
	m.save(m.runOf[w.ID])
	m.notify()
	v := m.view(w)
	v.Notes = notes
	return &v, nil
}

// Rename gives a worker a new name, in its run and on its window.
func (m *Manager) Rename(ctx context.Context, req IDRequest) (*WorkerView, error) {
	if isRemotePane(req.ID) {
		return m.remoteOp(ctx, "rename", req)
	}
	if !ValidName(req.Text) {
		return nil, errorf(KindUsage, "use letters, digits, '.', '_' and '-' (at most 40)", "the name %q has characters that tmux or a shell would misread", req.Text)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := m.resolve(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	r := m.runOf[w.ID]
	for _, o := range r.Workers {
		if o != w && o.Name == req.Text && o.State.Live() {
			return nil, errorf(KindConflict, "pick another name", "run %s already has a worker named %q", r.ID, req.Text)
		}
	}
	old := w.Name
	w.Name = req.Text
	if err := m.save(r); err != nil {
		w.Name = old
		return nil, err
	}
	if w.State.Live() {
		m.cfg.Tmux.RenameWindow(ctx, w.ID, req.Text)
		m.cfg.Tmux.SetOption(ctx, w.ID, "@st_name", req.Text)
	}
	m.notify()
	v := m.view(w)
	return &v, nil
}

// Release lets a worker go: it leaves its run, and is told so in one line.
func (m *Manager) Release(ctx context.Context, req IDRequest) (*WorkerView, error) {
	if isRemotePane(req.ID) {
		return m.remoteOp(ctx, "release", req)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := m.resolve(req.Pane, req.ID)
	if err != nil {
		return nil, err
	}
	r := m.runOf[w.ID]
	for i, o := range r.Workers {
		if o == w {
			r.Workers = append(r.Workers[:i:i], r.Workers[i+1:]...)
			break
		}
	}
	if err := m.save(r); err != nil {
		r.Workers = append(r.Workers, w)
		return nil, err
	}
	delete(m.workers, w.ID)
	delete(m.runOf, w.ID)
	v := m.view2(w, r)
	if w.State.Live() {
		for _, k := range []string{"@st_run", "@st_role", "@st_parent", "@st_name", "@st_team"} {
			m.cfg.Tmux.UnsetOption(ctx, w.ID, k)
		}
		m.notices.queue(w.ID, "st: you are no one's worker now - you were released from run "+r.ID+", so there is no need to run st worker done.")
	}
	m.notify()
	return &v, nil
}

func (m *Manager) view2(w *Worker, r *Run) WorkerView {
	return WorkerView{Worker: *w, Run: r.ID, For: roundDur(m.cfg.Now().Sub(w.Since))}
}

// Status is a summary for st status.
type Status struct {
	Runs    int `json:"runs"`
	Workers int `json:"workers"`
	Live    int `json:"live"`
	// Problems are what the user should know about and fix (a run.json
	// st could not read).
	Problems []string `json:"problems,omitempty"`
}

// Status counts runs and workers.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Runs: len(m.runs), Workers: len(m.workers), Problems: append([]string(nil), m.problems...)}
	for _, w := range m.workers {
		if w.State.Live() {
			s.Live++
		}
	}
	return s
}

// AgentPanes returns the panes where an agent runs, as st knows it.
func (m *Manager) AgentPanes() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for id, p := range m.panes {
		out[id] = p.agent
	}
	for id, w := range m.workers {
		if w.State.Live() {
			out[id] = w.Agent
		}
	}
	return out
}
