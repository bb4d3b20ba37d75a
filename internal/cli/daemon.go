package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/atlogin"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
	"github.com/sophonz/st/internal/version"
)

// stBin is the absolute path of this st binary, for the windows and hooks
// that must call it back.
func stBin() string {
	p, err := os.Executable()
	if err != nil {
		return "st"
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

type daemonOptions struct{}

func newDaemonCmd(env *Env, runF runFunc[daemonOptions]) *cobra.Command {
	var o daemonOptions
	cmd := &cobra.Command{Use: "daemon", Short: "Run st's daemon in the foreground", Args: cobra.NoArgs}
	return bind(cmd, env, &o, nil, runF, runDaemon)
}

func runDaemon(ctx context.Context, env *Env, _ daemonOptions) error {
	if env.Daemon == nil {
		return errors.New("st daemon runs in the st program only; this one has no daemon in it")
	}
	code, err := env.Daemon(ctx, env.Home(), stBin(), env.Stderr, env.Getenv)
	if code > 1 {
		// Its own status (another st holds ST_HOME), so that a login
		// service does not start it again.
		return &exitError{code: code, err: err}
	}
	return err
}

type upOptions struct{ AtLogin bool }

func newUpCmd(env *Env, runF runFunc[upOptions]) *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{Use: "up", Short: "Start st's daemon in the background (does nothing when it runs)", Args: cobra.NoArgs,
		Long: `Start st's daemon in the background (does nothing when it runs). Any command
that needs the daemon starts it too.

With --at-login, st also starts when you log in: a systemd user unit on Linux
($XDG_CONFIG_HOME/systemd/user/st.service, enabled for default.target), a
launchd agent on macOS (~/Library/LaunchAgents/` + atlogin.LaunchdLabel + `.plist), naming this
st by its absolute path, with ST_HOME (when set) and this shell's PATH.
st down --at-login removes it.`}
	cmd.Flags().BoolVar(&o.AtLogin, "at-login", false, "also start st when you log in (systemd user unit, launchd agent)")
	return bind(cmd, env, &o, nil, runF, runUp)
}

func runUp(ctx context.Context, env *Env, o upOptions) error {
	if o.AtLogin {
		if err := refuseCodexTool(env, "st up --at-login"); err != nil {
			return err
		}
	}
	s, _, err := ensureUp(ctx, env)
	if err != nil {
		return err
	}
	printRunning(env, s)
	if o.AtLogin {
		return installAtLogin(env, runtime.GOOS)
	}
	return nil
}

// refuseCodexTool refuses what writes outside Codex's sandbox for a
// command Codex runs for its model: st's rule lets st's commands out of
// the sandbox (internal/plugin), and a sandboxed Codex must gain nothing
// through st that its sandbox refuses (internal/authz). Codex sets
// CODEX_THREAD_ID and CODEX_TOOL_CALL_ID for those commands (measured
// with Codex 0.171.0), and its model cannot unset them in a command the
// rule lets out (a command with env or a redirection is not one).
func refuseCodexTool(env *Env, what string) error {
	if env.Getenv("CODEX_THREAD_ID") == "" && env.Getenv("CODEX_TOOL_CALL_ID") == "" {
		return nil
	}
	return &api.Error{Kind: "forbidden", Message: "refused: " + what + " changes the login service, which is a person's to do, and this command came from Codex's tool",
		Hint: "a person runs it from a shell that is not an agent's pane"}
}

// loginService is the login service of this st, for goos.
func loginService(env *Env, goos string) (atlogin.LoginService, error) {
	home := env.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	stHome := env.Getenv("ST_HOME")
	if stHome != "" {
		stHome, _ = filepath.Abs(stHome)
	}
	return atlogin.LoginServiceFor(goos, atlogin.LoginPaths{UserHome: home, ConfigHome: env.Getenv("XDG_CONFIG_HOME"),
		STBin: stBin(), STHome: stHome, LogPath: filepath.Join(env.Home(), "daemon.log"), Path: env.Getenv("PATH")})
}

// installAtLogin writes the login service (and, for systemd, the link
// that enables it, as systemctl --user enable would): files only, read by
// the service manager at the next login.
func installAtLogin(env *Env, goos string) error {
	s, err := loginService(env, goos)
	if err != nil {
		return usageError(err.Error(), "start st with st up after you log in, or from your shell's profile")
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return err
	}
	if err := store.WriteFile(s.Path, s.Content, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", s.Path, err)
	}
	if s.Link != "" {
		if err := os.MkdirAll(filepath.Dir(s.Link), 0o755); err != nil {
			return err
		}
		os.Remove(s.Link)
		if err := os.Symlink(s.LinkTo, s.Link); err != nil {
			return fmt.Errorf("enable %s: %w", s.Path, err)
		}
	}
	fmt.Fprintf(env.Stdout, "st starts when you log in: %s (%s)\n", s.Path, s.Manager)
	if goos == "linux" {
		fmt.Fprintln(env.Stdout, "  systemd reads it at your next login (systemctl --user daemon-reload reads it now)")
	}
	fmt.Fprintln(env.Stdout, "  st down --at-login removes it")
	return nil
}

// removeAtLogin takes the login service out, if st wrote one.
func removeAtLogin(env *Env, goos string) error {
	s, err := loginService(env, goos)
	if err != nil {
		return usageError(err.Error(), "st down")
	}
	gone := false
	for _, p := range []string{s.Link, s.Path} {
		if p == "" {
			continue
		}
		switch err := os.Remove(p); {
		case err == nil:
			gone = true
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if gone {
		fmt.Fprintf(env.Stdout, "st no longer starts when you log in (removed %s)\n", s.Path)
	} else {
		fmt.Fprintf(env.Stdout, "st did not start at login (no %s)\n", s.Path)
	}
	return nil
}

// ensureUp starts the daemon unless it answers, and waits until it does.
// One st at a time starts it (it holds $ST_HOME/up.lock meanwhile), so
// that many commands finding st down at once start one daemon.
func ensureUp(ctx context.Context, env *Env) (s *api.StatusInfo, started bool, err error) {
	c := env.RunningClient()
	if s, err := c.Status(ctx); err == nil {
		return s, false, nil
	}
	home := env.Home()
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, false, store.HomeWriteError(home, "make its folder", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// The one file of ST_HOME the command line takes: a lock, held only
	// while it starts the daemon; the state files are the daemon's alone.
	lock, err := store.LockWait(lctx, filepath.Join(home, "up.lock"), 20*time.Millisecond)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, false, store.HomeWriteError(home, "write up.lock", err)
		}
		return nil, false, fmt.Errorf("wait for the st that is starting st's daemon (%s): %w", filepath.Join(home, "up.lock"), err)
	}
	defer lock.Unlock()
	if s, err := c.Status(ctx); err == nil { // the st before us started it
		return s, false, nil
	}
	logPath := filepath.Join(home, "daemon.log")
	logFrom := fileSize(logPath)
	exited, err := startDaemon(home, logPath, env.Getenv("ST_HOME") != "")
	if err != nil {
		return nil, false, err
	}
	deadline := time.After(15 * time.Second)
	for {
		if s, err := c.Status(ctx); err == nil {
			return s, true, nil
		}
		select {
		case err := <-exited:
			if s, err2 := c.Status(ctx); err2 == nil { // a daemon started by other means won
				return s, false, nil
			}
			return nil, false, daemonExited(err, logPath, logFrom)
		case <-deadline:
			return nil, false, fmt.Errorf("st daemon did not answer within 15 s; its log is %s", logPath)
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startOnDown is what a command that needs the daemon does when it finds
// none: it starts it, as st up would, and says so on stderr (once). Not
// inside a Codex sandbox: a daemon started there would be shut in it (no
// tmux, no socket for anyone else), so the command fails or retries as
// before and the agent's hooks, which run outside, carry on.
func startOnDown(ctx context.Context, env *Env, cause error) error {
	if sandboxed(env) || !env.SelfIsST {
		return cause
	}
	s, started, err := ensureUp(ctx, env)
	if err != nil {
		return fmt.Errorf("st is not running, and starting it failed: %w", err)
	}
	if started && !env.started {
		env.started = true
		fmt.Fprintf(env.Stderr, "st: st was not running, so it was started (pid %d; log %s)\n", s.PID, filepath.Join(env.Home(), "daemon.log"))
	}
	return nil
}

// sandboxed tells a command run inside Codex's sandbox, which marks the
// commands it runs there (Linux: CODEX_SANDBOX_NETWORK_DISABLED, macOS:
// CODEX_SANDBOX=seatbelt).
func sandboxed(env *Env) bool {
	return env.Getenv("CODEX_SANDBOX") != "" || env.Getenv("CODEX_SANDBOX_NETWORK_DISABLED") != ""
}

// startDaemon starts st daemon in the background, its output appended to
// logPath (opened here, as the daemon's stdout and stderr: the daemon
// writes it); the channel tells when it exits. setHome passes home as its
// ST_HOME: the one it was given may be relative, and the daemon runs in
// home (absHome).
func startDaemon(home, logPath string, setHome bool) (exited <-chan error, err error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, store.HomeWriteError(home, "make its folder", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, store.HomeWriteError(home, "write daemon.log", err)
	}
	defer logf.Close()
	cmd := exec.Command(stBin(), "daemon")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = home
	if setHome {
		cmd.Env = append(os.Environ(), "ST_HOME="+home)
	}
	// Its own session, so that closing the terminal or pane that ran
	// st up does not take the daemon with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start st daemon: %w", err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return ch, nil
}

// fileSize is the size of the file at path (0 when there is none).
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// daemonExited says why a daemon this st started ended before it
// answered: what it wrote to its log since it started (from byte from:
// what earlier daemons wrote there is not this one's reason), at most
// its last lines. When the daemon said what to try (a config.toml it
// could not use names the line to fix), that is the Try line; else it
// is to run it in the foreground and see.
func daemonExited(waitErr error, logPath string, from int64) error {
	said := logSince(logPath, from, 8)
	if said == "" {
		return &api.Error{Kind: api.KindInternal, Message: fmt.Sprintf("st daemon ended before it answered (%v), and wrote nothing to %s", waitErr, logPath),
			Hint: "st daemon, to see it run in the foreground"}
	}
	msg, hint, ok := strings.Cut(said, "\nTry: ")
	if !ok {
		return &api.Error{Kind: api.KindInternal, Message: "st daemon ended before it answered: " + said,
			Hint: "st daemon, to see it run in the foreground (its log is " + logPath + ")"}
	}
	return &api.Error{Kind: api.KindUsage, Message: "st daemon could not start: " + msg, Hint: strings.TrimSpace(hint)}
}

// logSince is what path holds from byte from on, at most its last n
// lines, without the "st: " that starts an error of st's.
func logSince(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	text := strings.TrimSpace(string(data))
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimPrefix(strings.Join(lines, "\n"), "st: ")
}

type downOptions struct{ AtLogin bool }

func newDownCmd(env *Env, runF runFunc[downOptions]) *cobra.Command {
	var o downOptions
	cmd := &cobra.Command{Use: "down", Short: "Stop st's daemon (workers and their windows stay)", Args: cobra.NoArgs}
	cmd.Flags().BoolVar(&o.AtLogin, "at-login", false, "also stop starting st when you log in (undoes st up --at-login)")
	return bind(cmd, env, &o, nil, runF, runDown)
}

func runDown(ctx context.Context, env *Env, o downOptions) error {
	if o.AtLogin {
		if err := refuseCodexTool(env, "st down --at-login"); err != nil {
			return err
		}
		if err := removeAtLogin(env, runtime.GOOS); err != nil {
			return err
		}
	}
	pid, err := env.RunningClient().Shutdown(ctx)
	if errors.Is(err, client.ErrDown) {
		fmt.Fprintln(env.Stdout, "st is not running")
		return nil
	}
	if err != nil {
		return err
	}
	// Stopped is the socket gone and the daemon's lock free: the socket
	// goes first, and an st up before the lock is let go would find a
	// daemon "already running" that is on its way out.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(api.SocketPath(env.Home())); os.IsNotExist(err) {
			if l, ok, _ := store.TryLock(api.LockPath(env.Home())); ok {
				l.Unlock()
				fmt.Fprintf(env.Stdout, "st stopped (pid %d)\n", pid)
				return nil
			}
		}
		if err := syncs.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("st (pid %d) did not stop within 10 s", pid)
}

type statusOptions struct{ JSON bool }

func newStatusCmd(env *Env, runF runFunc[statusOptions]) *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{Use: "status", Short: "Say whether st's daemon runs, and what it holds", Args: cobra.NoArgs}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runStatus)
}

func runStatus(ctx context.Context, env *Env, o statusOptions) error {
	// It never starts st: it is how a person, or st doctor, finds out
	// whether st runs.
	s, err := env.RunningClient().Status(ctx)
	return printResult(env, o.JSON, s, err, func(w io.Writer, s *api.StatusInfo) error {
		fmt.Fprintf(w, "st %s is running (pid %d, up %s)\n", s.Version, s.PID, time.Since(s.Started).Round(time.Second))
		fmt.Fprintf(w, "  home:   %s\n  socket: %s\n  tmux:   %s\n", s.Home, s.Socket, s.TmuxSocket)
		if s.TmuxDown != nil {
			what := "it is not running"
			if s.Restoring {
				what = "st is bringing its sessions back"
			}
			fmt.Fprintf(w, "  the tmux server is gone (for %s): %s\n", time.Since(*s.TmuxDown).Round(time.Millisecond), what)
		}
		if s.Resuming > 0 {
			fmt.Fprintf(w, "  restore: %d agents are starting again after the tmux server went down\n", s.Resuming)
		}
		switch {
		case s.Web != "" && s.WebNote != "":
			fmt.Fprintf(w, "  web:    %s (%s; st web prints it with its token)\n", s.Web, s.WebNote)
		case s.Web != "":
			fmt.Fprintf(w, "  web:    %s (st web prints it with its token)\n", s.Web)
		case s.WebError != nil:
			fmt.Fprintf(w, "  web:    off: %s\n  Try: %s\n", s.WebError.Message, s.WebError.Hint)
		}
		fmt.Fprintf(w, "  runs: %d, workers: %d (%d alive)\n", s.Orch.Runs, s.Orch.Workers, s.Orch.Live)
		if s.Orch.Attention > 0 {
			fmt.Fprintf(w, "  needs you: %d (st attention lists them)\n", s.Orch.Attention)
		}
		printNearLimits(w, "  ", s.Orch.Limits)
		for _, c := range s.Orch.Coordinators {
			fmt.Fprintf(w, "  coordinator %s (%s, %s): %s\n", c.Pane, c.Agent, c.Run, coordStateCell(c.Agent, &c.Pause))
		}
		printProblems(env, s)
		return nil
	})
}

type versionOptions struct{}

func newVersionCmd(env *Env, runF runFunc[versionOptions]) *cobra.Command {
	var o versionOptions
	cmd := &cobra.Command{Use: "version", Short: "Print st's version", Args: cobra.NoArgs}
	return bind(cmd, env, &o, nil, runF, runVersion)
}

func runVersion(_ context.Context, env *Env, _ versionOptions) error {
	fmt.Fprintf(env.Stdout, "st %s\n", version.Full())
	return nil
}

type lsOptions struct{ JSON bool }

func newLsCmd(env *Env, runF runFunc[lsOptions]) *cobra.Command {
	var o lsOptions
	cmd := &cobra.Command{Use: "ls", Short: "List the sessions of st's tmux server, their windows and agents", Args: cobra.NoArgs}
	jsonFlag(cmd, &o.JSON)
	return bind(cmd, env, &o, nil, runF, runLs)
}

func runLs(ctx context.Context, env *Env, o lsOptions) error {
	c := env.Client()
	ses, err := c.Ls(ctx)
	if err != nil || o.JSON {
		return printResult(env, o.JSON, ses, err, nil)
	}
	// The summary says which agent accounts are near a usage limit, as
	// st status does; the limits are the daemon's, not any session's, so
	// they come from its status (st status --json has them for programs,
	// and st ls --json stays the list of sessions). A daemon that cannot
	// say leaves the line out: the listing is what was asked for.
	var limits []api.AgentLimit
	if s, err := c.Status(ctx); err == nil {
		limits = s.Orch.Limits
	}
	if err := printSessions(env.Stdout, ses); err != nil {
		return err
	}
	printNearLimits(env.Stdout, "", limits)
	return nil
}

func printSessions(w io.Writer, ses []api.LsSession) error {
	needs := 0
	err := printTable(w, ses, "no sessions (st's tmux server is not running)", "SESSION\tWINDOWS\tAGENTS", func(tw io.Writer, s api.LsSession) {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", s.Name, len(s.Windows), s.Agents)
		for _, w := range s.Windows {
			fmt.Fprintf(tw, "  %s: %s\t%s\t%s\n", w.Index, w.Name, strings.Join(w.Panes, " "), strings.Join(w.Agents, ", "))
		}
		needs += s.Attention
	})
	if err == nil && needs > 0 {
		_, err = fmt.Fprintf(w, "%d agents need you (st attention lists them)\n", needs)
	}
	return err
}

type webOptions struct{}

func newWebCmd(env *Env, runF runFunc[webOptions]) *cobra.Command {
	var o webOptions
	cmd := &cobra.Command{Use: "web", Short: "Print the web UI's address (with its secret token)", Args: cobra.NoArgs}
	return bind(cmd, env, &o, nil, runF, runWeb)
}

func runWeb(ctx context.Context, env *Env, _ webOptions) error {
	c := env.Client()
	u, err := c.Web(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, u.URL)
	if s, err := c.Status(ctx); err == nil {
		if s.WebNote != "" {
			fmt.Fprintf(env.Stderr, "st: note: the web UI is on %s\n", s.WebNote)
		}
		if s.WebMoved != "" {
			fmt.Fprintf(env.Stderr, "st: warning: %s\n", s.WebMoved)
		}
	}
	return nil
}

func printRunning(env *Env, s *api.StatusInfo) {
	fmt.Fprintf(env.Stdout, "st is running (pid %d, %s)\n", s.PID, s.Socket)
	printProblems(env, s)
}

// printProblems says what st could not read, on stderr, each time the
// user looks at st's state (st up, st status).
func printProblems(env *Env, s *api.StatusInfo) {
	for _, p := range s.Orch.Problems {
		fmt.Fprintf(env.Stderr, "st: warning: %s\n", p)
	}
	if e := s.WebError; e != nil {
		fmt.Fprintf(env.Stderr, "st: warning: the web UI is off: %s\nTry: %s\n", e.Message, e.Hint)
	}
	if s.WebMoved != "" {
		fmt.Fprintf(env.Stderr, "st: warning: %s\n", s.WebMoved)
	}
}
