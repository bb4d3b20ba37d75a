package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
	"github.com/sophonz/st/internal/daemon"
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

func newDaemonCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "daemon",
		Short: "Run st's daemon in the foreground",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := daemon.Run(cmd.Context(), daemon.Options{
				Home: env.Home(), STBin: stBin(), Log: env.Stderr, Getenv: env.Getenv,
			})
			if errors.Is(err, daemon.ErrRunning) {
				return fmt.Errorf("%w\nTry: st status, or st down to stop it", err)
			}
			return err
		},
	}
}

func newUpCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "Start st's daemon in the background (does nothing when it runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUp(cmd.Context(), env)
		},
	}
}

func runUp(ctx context.Context, env *Env) error {
	c := env.Client()
	if s, err := c.Status(ctx); err == nil {
		printRunning(env, s)
		return nil
	}
	home := env.Home()
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("make ST_HOME %s: %w", home, err)
	}
	logPath := filepath.Join(home, "daemon.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logf.Close()
	cmd := exec.Command(stBin(), "daemon")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = home
	// Its own session, so that closing the terminal or pane that ran
	// st up does not take the daemon with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start st daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(15 * time.Second)
	for {
		if s, err := c.Status(ctx); err == nil {
			printRunning(env, s)
			return nil
		}
		select {
		case err := <-exited:
			if s, err2 := c.Status(ctx); err2 == nil { // another st up won the race
				printRunning(env, s)
				return nil
			}
			return fmt.Errorf("st daemon exited (%v): %s\nTry: st daemon, to see it run in the foreground", err, lastLines(logPath, 5))
		case <-deadline:
			return fmt.Errorf("st daemon did not answer within 15 s; its log is %s", logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func newDownCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop st's daemon (workers and their windows stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := env.Client()
			var res map[string]int
			if err := c.Call(cmd.Context(), "/v1/shutdown", struct{}{}, &res); err != nil {
				if errors.Is(err, client.ErrDown) {
					fmt.Fprintln(env.Stdout, "st is not running")
					return nil
				}
				return err
			}
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := os.Stat(api.SocketPath(env.Home())); os.IsNotExist(err) {
					fmt.Fprintf(env.Stdout, "st stopped (pid %d)\n", res["pid"])
					return nil
				}
				time.Sleep(20 * time.Millisecond)
			}
			return fmt.Errorf("st (pid %d) did not stop within 10 s", res["pid"])
		},
	}
}

func newStatusCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether st's daemon runs, and what it holds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := env.Client().Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, s)
			}
			fmt.Fprintf(env.Stdout, "st %s is running (pid %d, up %s)\n", s.Version, s.PID, time.Since(s.Started).Round(time.Second))
			fmt.Fprintf(env.Stdout, "  home:   %s\n  socket: %s\n  tmux:   %s\n", s.Home, s.Socket, s.TmuxSocket)
			if s.TmuxDown != nil {
				what := "it is not running"
				if s.Restoring {
					what = "st is bringing its sessions back"
				}
				fmt.Fprintf(env.Stdout, "  the tmux server is gone (for %s): %s\n", time.Since(*s.TmuxDown).Round(time.Millisecond), what)
			}
			fmt.Fprintf(env.Stdout, "  runs: %d, workers: %d (%d alive)\n", s.Orch.Runs, s.Orch.Workers, s.Orch.Live)
			printProblems(env, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newVersionCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print st's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(env.Stdout, "st %s\n", version.Version)
			return nil
		},
	}
}

func newLsCmd(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the sessions of st's tmux server, their windows and agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ses []api.LsSession
			if err := env.Client().Call(cmd.Context(), "/v1/ls", struct{}{}, &ses); err != nil {
				return err
			}
			if asJSON {
				return printJSON(env.Stdout, ses)
			}
			if len(ses) == 0 {
				fmt.Fprintln(env.Stdout, "no sessions (st's tmux server is not running)")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tWINDOWS\tAGENTS")
			for _, s := range ses {
				fmt.Fprintf(tw, "%s\t%d\t%d\n", s.Name, len(s.Windows), s.Agents)
				for _, w := range s.Windows {
					fmt.Fprintf(tw, "  %s: %s\t%s\t%s\n", w.Index, w.Name, strings.Join(w.Panes, " "), strings.Join(w.Agents, ", "))
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newWebCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "web",
		Short: "Print the web UI's address (with its secret token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res map[string]string
			if err := env.Client().Call(cmd.Context(), "/v1/web", struct{}{}, &res); err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, res["url"])
			return nil
		},
	}
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
}
