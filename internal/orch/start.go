package orch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/plain"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/tmux"
)

// A start, in four steps: check the request (checkStart), place the
// worker in a run and hold its name (reserve), open its window and
// record it (openWorker), and type its task in until the agent's hook
// shows that the turn started (deliverTask).

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
// A task path with a space in it is written in quotes, as it is between
// them, and st's path in single quotes as a shell would need it, so that
// any agent reads each as one path.
func TaskLine(stBin, task string) string {
	return fmt.Sprintf("Your task is in the file %s - read it and do it. When you have finished, report with: %s worker done --summary \"<what you did, and how you checked it>\"", QuotePath(task), shellWord(stBin))
}

// QuotePath writes a path as one word of a sentence: as it is when it
// has no space; else between double quotes, or single quotes when it has
// a double quote, its characters as they are (a reader takes what is
// between the quotes); Go's quoting only for a path with both.
func QuotePath(p string) string {
	switch {
	case !strings.ContainsFunc(p, unicode.IsSpace):
		return p
	case !strings.Contains(p, `"`):
		return `"` + p + `"`
	case !strings.Contains(p, "'"):
		return "'" + p + "'"
	}
	return strconv.Quote(p)
}

// shellWord writes a path as one shell word.
func shellWord(p string) string {
	if !strings.ContainsAny(p, " \t\"'`\\$;&|<>()*?[]#~!{}") {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// startPlan is a start as orch carries it: the request, and where the
// worker goes when st itself places it.
type startPlan struct {
	api.StartRequest
	run      *Run         // a task's run (tasks place their workers themselves)
	fanGroup string       // the group of tries of a fan
	hosted   *hostedPlace // a start that another machine's coordinator asked for (hosted.go)
}

// startSpec is what checkStart found: the agent, the worker's name and
// the line to type.
type startSpec struct {
	ad   *agent.Kind
	name string
	line string
}

// StartWorker opens a window, starts the agent, types its task and returns
// once the agent's hook shows that its turn started.
func (m *Manager) StartWorker(ctx context.Context, req api.StartRequest) (*api.WorkerView, error) {
	return m.startWorker(ctx, startPlan{StartRequest: req})
}

func (m *Manager) startWorker(ctx context.Context, req startPlan) (*api.WorkerView, error) {
	spec, err := m.checkStart(req)
	if err != nil {
		return nil, err
	}
	if req.hosted == nil && req.run == nil {
		// (A task's start is held in scheduleLocked.)
		if err := m.checkBudgetHold(req.Pane); err != nil {
			return nil, err
		}
	}
	if req.Machine != "" {
		return m.startElsewhere(ctx, req, spec.name)
	}
	p := tmux.Pane{}
	if req.hosted != nil {
		p = req.hosted.pane
	} else if p, err = m.callerPane(ctx, req.Pane); err != nil {
		return nil, err
	}
	if req.Cwd == "" {
		req.Cwd = p.Path
	}
	if err := checkCwdFolder(req.Cwd); err != nil {
		return nil, err
	}
	if err := enterableDir(req.Cwd); err != nil {
		return nil, err
	}
	// The agent's version, before anything opens: one that lacks what st
	// needs is refused; one st was not tested on goes on, with a note.
	ver := agent.Check(ctx, spec.ad.Name, launchOptions(spec.ad.Name, m.cfg.STBin, spec.name, req.Env).Program,
		withDir(filepath.Dir(m.cfg.STBin), req.Env["PATH"]))
	if ver.Refused() {
		return nil, errorf(api.KindUsage, ver.Hint, "%s", ver.Note)
	}
	// Place the worker and hold its name before opening anything, so
	// that two starts cannot take one name.
	pl, err := m.reserve(ctx, p, req.run, req.hosted, spec.name)
	if err != nil {
		return nil, err
	}
	defer pl.release()
	w, notes, err := m.openWorker(ctx, req, spec, p, pl)
	if err != nil {
		pl.drop()
		return nil, err
	}
	v, err := m.deliverTask(ctx, req, spec, w)
	if err != nil {
		return nil, err
	}
	v.Notes = notes
	if n := m.notePanePath(ctx, w, v); n != "" {
		v.Notes = append(v.Notes, n)
	}
	if n := ver.Line(); n != "" {
		v.Notes = append(v.Notes, n)
	}
	return v, nil
}

// startElsewhere hands a start on another machine to the hub
// (internal/peer), with its task's text: the task travels.
func (m *Manager) startElsewhere(ctx context.Context, req startPlan, name string) (*api.WorkerView, error) {
	if req.Split {
		return nil, errorf(api.KindRemote, "leave --split out: the worker opens as a window of that machine's st-remote session", "refused: --split is for workers on this machine only")
	}
	if req.run != nil {
		return nil, errorf(api.KindRemote, "start the worker with st worker start --machine, and order it yourself", "refused: ordered tasks cannot run on other machines")
	}
	rm, err := m.remote()
	if err != nil {
		return nil, err
	}
	task, err := store.ReadRegular(req.Task) // a FIFO would hold the daemon
	if err != nil {
		return nil, errorf(api.KindUsage, "write the task into a file and pass its path with --task", "cannot read the task file %s: %v", req.Task, err)
	}
	return rm.Start(ctx, RemoteStart{StartRequest: req.StartRequest, Name: name, Text: task, Fan: req.fanGroup})
}

// checkStart checks what a start asks for, before anything is placed or
// opened.
func (m *Manager) checkStart(req startPlan) (startSpec, error) {
	if m.cfg.Home != "" {
		// The agents described in config.toml as it is now: one added or
		// mended since st started starts without a restart of st.
		agent.LoadDescribed(m.cfg.Home)
	}
	ad, err := checkStartAgent(req)
	if err != nil {
		return startSpec{}, err
	}
	if !api.ValidOnLimit(req.OnLimit) {
		return startSpec{}, errorf(api.KindUsage, "--on-limit wait|move|fail", "--on-limit takes wait, move or fail, not %q", req.OnLimit)
	}
	if !filepath.IsAbs(req.Task) {
		return startSpec{}, errorf(api.KindUsage, "give the task file's path", "the task file must be an absolute path, not %q", req.Task)
	}
	if err := checkTaskFile(req.Task); err != nil {
		return startSpec{}, err
	}
	name := req.Name
	if name == "" {
		name = NameFromTask(req.Task)
	} else if err := CheckName("the name", name, "--name api-tests"); err != nil {
		return startSpec{}, err
	}
	if err := checkCwd(req.Cwd); err != nil {
		return startSpec{}, err
	}
	line := TaskLine(m.cfg.STBin, req.Task)
	if len(line) >= 1000 {
		return startSpec{}, errorf(api.KindUsage, "move the task file to a shorter path", "the task file's path is too long to type (the line would be %d characters; agents take under 1000)", len(line))
	}
	if err := plain.Line(req.Task); err != nil {
		// Checked as written: quoting would hide a control character.
		return startSpec{}, errorf(api.KindUsage, "rename the task file without line breaks or control characters", "the task file's path cannot be typed as one line: the text has %s", err.(*plain.Error).What())
	}
	if err := CheckLine(line); err != nil {
		return startSpec{}, errorf(api.KindUsage, "rename the task file without line breaks or control characters", "the task file's path cannot be typed as one line: %v", err)
	}
	return startSpec{ad: ad, name: name, line: line}, nil
}

// checkStartAgent finds the kind a start asks for. The machine that runs
// the agent decides which kinds exist there: for a start on another
// machine (--machine), whose config.toml may describe a kind this one
// does not, the name is only checked for its form here (nil kind), and
// that machine refuses a kind it does not know, naming its own.
func checkStartAgent(req startPlan) (*agent.Kind, error) {
	ad, err := agent.Lookup(req.Agent)
	switch {
	case err == nil:
		return ad, nil
	case req.Machine != "" && agent.ValidKindName(req.Agent):
		return nil, nil
	case req.Machine != "":
		return nil, errorf(api.KindUsage, "--agent NAME, a kind that machine knows (st worker start --help there lists them)",
			"--agent %q is not an agent kind's name (lower-case letters, digits and '-', a letter first)", plain.Clean(req.Agent))
	}
	return nil, errorf(api.KindUsage, "--agent "+strings.Join(agent.Kinds(), "|"), "%v", err)
}

// enterableDir refuses a worker's folder that is not there or that this
// user cannot enter (no search permission on it or on a folder above it):
// tmux, failing to change into it, opens the window in another folder
// without a word, and the agent works there. A RAIL for the user's own
// mistake: it checks with the daemon's ids, which are the user's; a folder
// made unenterable after the check still opens elsewhere.
func enterableDir(dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil || !errors.Is(err, os.ErrPermission) {
			return errorf(api.KindUsage, "pass an existing folder with --cwd", "the worker's folder %s does not exist", dir)
		}
	}
	if err := syscall.Access(dir, 1 /* X_OK: search, that is enter */); err != nil {
		return errorf(api.KindUsage, "pass a folder you can enter with --cwd (ls -ld "+dir+" shows its owner and mode), or have its owner let you in",
			"you cannot enter the worker's folder %s (%v): tmux would open the window in another folder, and the agent would work there", dir, err)
	}
	return nil
}

// notePanePath records where the worker's pane really is, once its
// agent runs: tmux opens a window in another folder, without a word, when
// it cannot enter the one asked for. enterableDir refuses such a folder
// first, but a folder can change between the check and the opening; the
// record then names the folder the agent works in, and the start says so.
func (m *Manager) notePanePath(ctx context.Context, w *Worker, v *api.WorkerView) string {
	p, err := m.cfg.Tmux.Pane(ctx, v.ID)
	if err != nil || p.Path == "" || sameDir(p.Path, v.Cwd) {
		return ""
	}
	asked := v.Cwd
	m.settleChange(func(c *change) {
		w.Cwd = p.Path
		c.touchLocked(m.reg.runOf[w.ID])
	})
	v.Cwd = p.Path
	return fmt.Sprintf("tmux opened the window in %s, not in %s as asked, and the agent works there (st worker stop %s --yes closes it; start it again with a folder you can enter)", p.Path, asked, v.ID)
}

// sameDir reports whether two paths name one folder, links followed.
func sameDir(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// checkCwd refuses a worker's folder (--cwd) that st could not print or
// pass on as it is: a control character in it (C0 or C1, such as U+009B,
// a CSI to terminals that take 8-bit controls) would act on the screen of
// whoever reads a message naming it. It is shown quoted (%q), never raw.
func checkCwd(cwd string) error {
	if err := plain.Line(cwd); err != nil {
		return errorf(api.KindUsage, "pass a folder whose path has no control characters or line breaks with --cwd (rename it, or use a link to it)",
			"the worker's folder %q cannot be used: %v", cwd, err)
	}
	return nil
}

// openWorker opens the worker's window (in its worktree when it has one),
// puts st's relations on its pane and records the worker in its run.
func (m *Manager) openWorker(ctx context.Context, req startPlan, spec startSpec, p tmux.Pane, pl *placed) (*Worker, []string, error) {
	r := pl.run
	cwd, scope, wt, notes, undoTree, err := m.prepareTree(req.StartRequest, r, spec.name, req.Cwd)
	if err != nil {
		return nil, nil, err
	}
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
		Target: target, Name: spec.name, Cwd: cwd, Env: env, Split: req.Split,
		Command: spec.ad.Command(launchOptions(spec.ad.Name, m.cfg.STBin, spec.name, env)),
	})
	if err != nil {
		undoTree()
		return nil, nil, errorf(api.KindInternal, "check that the coordinator's session still exists", "%v", err)
	}
	// The relations on the pane are how st knows it after a restart of
	// st: a worker whose pane lacks them would count as gone. So a failed
	// try (a busy server) is tried again.
	rel := map[string]map[string]string{wp.ID: {"@st_run": r.ID, "@st_role": "worker", "@st_parent": p.ID, "@st_name": spec.name}}
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
		ID: wp.ID, Name: spec.name, Agent: spec.ad.Name, Parent: p.ID, Level: pl.level, State: api.Starting, Since: now, Typing: true,
		Task: req.Task, Cwd: cwd, Window: wp.WindowID, Session: wp.SessionID, StartedAt: now,
		Scope: scope, Worktree: wt, Fan: req.fanGroup, OnLimit: cmp.Or(req.OnLimit, r.OnLimit),
	}
	if h := req.hosted; h != nil {
		w.Ref = h.f.Ref
		w.ParentName, w.ParentMachineName = h.f.ParentName, h.f.FromName
	}
	if err := m.register(r, w); err != nil {
		m.killPane(ctx, wp.ID, spec.ad.Name)
		return nil, nil, err
	}
	m.kickWatch() // keep the new window in st's picture of the server
	m.logf("worker %s (%s) of run %s opened for %s", w.ID, spec.name, r.ID, p.ID)
	return w, notes, nil
}

// register records a new worker in run r, on disk before it returns
// (keep: the write is waited for without the registry's lock, so that
// starts side by side share their writes).
func (m *Manager) register(r *Run, w *Worker) error {
	return m.keep(func(c *change) (func(), error) {
		m.reg.addWorkerLocked(r, w)
		c.touchLocked(r)
		return func() { m.reg.removeWorkerLocked(w) }, nil
	})
}

// askedID is how the one who asked for a start names its pane, when not
// by the pane id: a coordinator on another machine names it machine/%7
// (%7 there is a pane of its own), so that what st tells it to type
// (st worker stop ci-mac/%7 --yes) works where it is typed.
func askedID(req startPlan, pane string) string {
	if req.hosted == nil || req.hosted.f.Self == "" {
		return ""
	}
	return req.hosted.f.Self + "/" + pane
}

// deliverTask types the task line into the new worker and waits for its
// turn to start. A screen that asks something first (trust, a login)
// makes the worker blocked until a person answers it.
func (m *Manager) deliverTask(ctx context.Context, req startPlan, spec startSpec, w *Worker) (*api.WorkerView, error) {
	d := delivery{
		pane: w.ID, label: askedID(req, w.ID), adapter: spec.ad, text: spec.line, fresh: true,
		blockedTimeout: orDefault(req.BlockedTimeout, DefaultBlockedTimeout),
		hookTimeout:    orDefault(req.HookTimeout, DefaultHookTimeout),
		onBlocked: func(s agent.Screen) {
			m.settleChange(func(c *change) { c.setStateLocked(w, api.Blocked) })
		},
	}
	err := m.deliver(ctx, &d)
	v, err := m.settleDelivery(w, err)
	if err == nil {
		return &v, nil
	}
	var oe *api.Error
	if errors.As(err, &oe) {
		oe.Message = fmt.Sprintf("worker %s (%s): %s", d.id(), spec.name, oe.Message)
		return nil, oe
	}
	return nil, err
}

// settleDelivery records how the typing of w's task ended: its turn
// started (working), a screen holds it up (blocked, with why), or it
// failed (with why). Either way the task is no longer being typed.
func (m *Manager) settleDelivery(w *Worker, err error) (api.WorkerView, error) {
	var oe *api.Error
	var v api.WorkerView
	m.settleChange(func(c *change) {
		w.Typing = false // on disk too: the next st must not type it again
		c.touchLocked(m.reg.runOf[w.ID])
		switch {
		case err == nil:
			if w.State == api.Starting || w.State == api.Blocked {
				c.setStateLocked(w, api.Working)
			}
			v = m.viewLocked(w)
		case errors.As(err, &oe) && oe.Kind == api.KindBlocked:
			w.Error = oe.Message
			c.touchLocked(m.reg.runOf[w.ID])
		default:
			w.Error = err.Error()
			c.setStateLocked(w, api.Failed)
			c.touchLocked(m.reg.runOf[w.ID])
		}
	})
	return v, err
}

// launchOptions reads an agent's launch settings from the caller's
// environment (then the daemon's): ST_<KIND>_BIN (ST_CLAUDE_BIN...),
// ST_<KIND>_PERMISSION_MODE (Claude's --permission-mode, Gemini's
// --approval-mode), ST_CODEX_NETWORK=1.
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
		PermissionMode: get("ST_" + strings.ToUpper(kind) + "_PERMISSION_MODE"),
		NetworkAccess:  get("ST_CODEX_NETWORK") == "1",
	}
}

// checkTaskFile refuses a task file that would hand the agent nothing to
// read: one that is not there, a folder, a device or a pipe (/dev/null,
// /dev/zero, a FIFO: what an agent reads there is nothing, or never
// ends), or an empty file.
func checkTaskFile(path string) error {
	const hint = "write the task into a file and pass its path with --task"
	fi, err := os.Stat(path)
	switch {
	case err != nil || fi.IsDir():
		return errorf(api.KindUsage, hint, "cannot read the task file %s: %v", path, errNotFile(err))
	case !fi.Mode().IsRegular():
		return errorf(api.KindUsage, hint, "the task file %s is not a file but a %s, which gives the agent no task to read", path, fileKind(fi.Mode()))
	case fi.Size() == 0:
		return errorf(api.KindUsage, "write the task into "+path+" first", "the task file %s is empty, so the agent would have no task", path)
	}
	return nil
}

// fileKind names what a path that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// checkCwdFolder refuses a worker's folder that is not there, or is not a
// folder, saying which.
func checkCwdFolder(cwd string) error {
	fi, err := os.Stat(cwd)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errorf(api.KindUsage, "pass an existing folder with --cwd", "the worker's folder %s does not exist", cwd)
	case err != nil:
		return errorf(api.KindUsage, "pass a folder you can enter with --cwd", "the worker's folder %s cannot be used: %v", cwd, errors.Unwrap(err))
	case !fi.IsDir():
		return errorf(api.KindUsage, "pass its folder with --cwd "+filepath.Dir(cwd), "the worker's folder %s is a file, not a folder", cwd)
	}
	return nil
}

func errNotFile(err error) error {
	if err == nil {
		return errors.New("it is a folder")
	}
	if err == nil {
		return errors.New("it is not a regular file (a named pipe or a device, which st does not read)")
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
