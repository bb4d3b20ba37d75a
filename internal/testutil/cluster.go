package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is several "machines" on one box for the tests of workers on
// other machines: a control plane on 127.0.0.1 and, per machine, its own
// ST_HOME, HOME, tmux server and peer address (127.0.0.N), or none at all
// (Relayed). Everything it starts it stops in cleanup, by pid or by its
// own tmux socket.
type Cluster struct {
	t      testing.TB
	Bin    string
	Dir    string
	URL    string // the control plane's
	CA     string // its ca.pem
	cpData string
	cp     *exec.Cmd
	// cpLogFrom is where the running control plane's lines begin in
	// cp.log (each start appends to it).
	cpLogFrom int64
	keys      map[string]string // account -> key
	// Extra is added to every machine's environment (ST_HEARTBEAT...).
	Extra []string
	// Relayed: no machine has a peer listener (peer_listen off), so every
	// request between machines goes through the control plane's relay.
	Relayed bool
	// RelayRecord is the folder where the control plane keeps what its
	// relay read of each stream (st control-plane serve --relay-record).
	RelayRecord string
	// CPArgs are more flags of st control-plane serve, for its next
	// start (StartControlPlane), such as --cert-lifetime.
	CPArgs []string
}

// Ways are the ways machines of a Cluster reach each other, by name:
// "direct" (each has a peer listener on its 127.0.0.N) and "relayed"
// (none has one). The machines tier runs each of its tests both ways.
var Ways = []string{"direct", "relayed"}

// NewClusterWay starts a control plane (NewCluster) whose machines reach
// each other the way named (see Ways).
func NewClusterWay(t testing.TB, way string) *Cluster {
	t.Helper()
	switch way {
	case "direct":
		return NewCluster(t)
	case "relayed":
		return newCluster(t, true)
	}
	t.Fatalf("no way %q: use one of %v", way, Ways)
	return nil
}

// Machine is one machine of a Cluster.
type Machine struct {
	c       *Cluster
	Name    string
	IP      string
	Home    string // ST_HOME
	UserDir string // HOME
	Tmux    *Tmux
	Extra   []string
}

// NewCluster starts a control plane with offline-after 3s, whose
// machines each have a peer listener on their own 127.0.0.N.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	return newCluster(t, false)
}

func newCluster(t testing.TB, relayed bool) *Cluster {
	t.Helper()
	// ShortTempDir fails the test when a process of the cluster's
	// folder outlives it (CheckNoLeaks).
	c := &Cluster{t: t, Bin: BuildST(t), Dir: ShortTempDir(t), keys: map[string]string{}, Relayed: relayed}
	c.cpData = filepath.Join(c.Dir, "cp")
	c.RelayRecord = filepath.Join(c.Dir, "relay-record")
	c.StartControlPlane()
	t.Cleanup(func() {
		c.StopControlPlane()
		if t.Failed() {
			t.Logf("control plane log:\n%s", lastLines(c.CPLog(), 60))
		}
	})
	return c
}

// CPLog is what the control plane printed.
func (c *Cluster) CPLog() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "cp.log"))
	return string(b)
}

// StartControlPlane starts (or starts again) the control plane on a free port.
func (c *Cluster) StartControlPlane() {
	c.t.Helper()
	os.Remove(filepath.Join(c.cpData, "url"))
	cmd := exec.Command(c.Bin, append([]string{"control-plane", "serve", "--data", c.cpData, "--listen", "127.0.0.1:0", "--offline-after", "3s",
		"--relay-record", c.RelayRecord}, c.CPArgs...)...)
	cmd.Env = Env(os.Environ())
	log, err := os.OpenFile(filepath.Join(c.Dir, "cp.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	if fi, err := log.Stat(); err == nil {
		c.cpLogFrom = fi.Size()
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start the control plane: %v", err)
	}
	c.cp = cmd
	WaitFor(c.t, 15*time.Second, func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(c.cpData, "url"))
		c.URL = strings.TrimSpace(string(b))
		return err == nil && c.URL != "", "the control plane wrote no url file"
	})
	c.CA = filepath.Join(c.cpData, "ca.pem")
}

// MetricsURL is where the running control plane serves /metrics, as it
// printed it: started with --metrics HOST:PORT in CPArgs (port 0 for a
// free one). It fails the test when the control plane prints none.
func (c *Cluster) MetricsURL() string {
	c.t.Helper()
	var url string
	WaitFor(c.t, 15*time.Second, func() (bool, string) {
		log := c.CPLog()
		if int64(len(log)) < c.cpLogFrom {
			return false, "cp.log is shorter than when the control plane started"
		}
		for _, l := range strings.Split(log[c.cpLogFrom:], "\n") {
			if rest, ok := strings.CutPrefix(l, "metrics on "); ok {
				url, _, _ = strings.Cut(rest, " ")
			}
		}
		return url != "", "the control plane printed no metrics URL (is --metrics in CPArgs?):\n" + lastLines(log, 20)
	})
	return url
}

// StopControlPlane stops the control plane this cluster started.
func (c *Cluster) StopControlPlane() {
	if c.cp != nil && c.cp.Process != nil {
		c.cp.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.cp.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.cp.Process.Kill()
			<-done
		}
		c.cp = nil
	}
}

// RemoveMachine removes a machine from an account at the control plane
// (st control-plane machine remove) and returns what it printed.
func (c *Cluster) RemoveMachine(name, account string) string {
	c.t.Helper()
	out, err := exec.Command(c.Bin, "control-plane", "machine", "remove", name, "--account", account, "--data", c.cpData).CombinedOutput()
	if err != nil {
		c.t.Fatalf("remove machine %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// Key makes an account (once) and returns its key.
func (c *Cluster) Key(account string) string {
	c.t.Helper()
	if k := c.keys[account]; k != "" {
		return k
	}
	out, err := exec.Command(c.Bin, "control-plane", "account", "add", account, "--data", c.cpData).CombinedOutput()
	if err != nil {
		c.t.Fatalf("add account %s: %v\n%s", account, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "key: "); ok {
			c.keys[account] = strings.TrimSpace(k)
		}
	}
	if c.keys[account] == "" {
		c.t.Fatalf("no key in: %s", out)
	}
	return c.keys[account]
}

// Machine makes a machine called name whose peer listener is on ip. It
// is neither signed in nor running until Login and Up.
func (c *Cluster) Machine(name, ip string) *Machine {
	c.t.Helper()
	dir := filepath.Join(c.Dir, name)
	m := &Machine{c: c, Name: name, IP: ip, Home: filepath.Join(dir, "st"), UserDir: filepath.Join(dir, "home")}
	for _, d := range []string{m.Home, m.UserDir, filepath.Join(dir, "t")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			c.t.Fatal(err)
		}
	}
	m.Tmux = NewTmux(c.t, filepath.Join(dir, "t"))
	c.t.Cleanup(func() {
		// Keep the daemon's log for a failed test, then stop it.
		if c.t.Failed() {
			if b, err := os.ReadFile(filepath.Join(m.Home, "daemon.log")); err == nil {
				c.t.Logf("daemon log of %s:\n%s", name, lastLines(string(b), 60))
			}
		}
		m.KillDaemon()
	})
	return m
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Env is the machine's environment for st and tmux.
func (m *Machine) Env(extra ...string) []string {
	listen := m.IP + ":0"
	if m.c.Relayed {
		listen = "off"
	}
	set := []string{"ST_HOME=" + m.Home, "HOME=" + m.UserDir, "TMUX_TMPDIR=" + m.Tmux.Dir,
		"ST_PEER_LISTEN=" + listen, "ST_WEB_PORT=auto", "ST_HOSTNAME=host-" + m.Name,
		"PATH=" + filepath.Dir(m.c.Bin) + string(os.PathListSeparator) + os.Getenv("PATH")}
	set = append(set, m.c.Extra...)
	set = append(set, m.Extra...)
	set = append(set, extra...)
	return Env(os.Environ(), set...)
}

// ST runs st on this machine outside tmux.
func (m *Machine) ST(args ...string) (string, error) { return m.run(nil, args...) }

// In runs st on this machine as if typed in pane.
func (m *Machine) In(pane string, args ...string) (string, error) {
	return m.run([]string{"TMUX=" + m.Tmux.Socket + ",1,0", "TMUX_PANE=" + pane}, args...)
}

func (m *Machine) run(extra []string, args ...string) (string, error) {
	cmd := exec.Command(m.c.Bin, args...)
	cmd.Env = m.Env(extra...)
	cmd.Dir = m.UserDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("st %s on %s: %w\n%s", strings.Join(args, " "), m.Name, err, out)
	}
	return string(out), nil
}

// MustST is ST that fails the test on an error.
func (m *Machine) MustST(pane string, args ...string) string {
	m.c.t.Helper()
	var out string
	var err error
	if pane == "" {
		out, err = m.ST(args...)
	} else {
		out, err = m.In(pane, args...)
	}
	if err != nil {
		m.c.t.Fatal(err)
	}
	return out
}

// Login signs the machine in to account.
func (m *Machine) Login(account string) {
	m.c.t.Helper()
	m.MustST("", "login", "--control-plane", m.c.URL, "--ca", m.c.CA, "--account", account, "--key", m.c.Key(account), "--name", m.Name)
}

// Up starts the machine's tmux server (a session "main" with a shell)
// when it has none, and its st daemon. It returns the main pane.
func (m *Machine) Up() string {
	m.c.t.Helper()
	if _, err := m.Tmux.Run("has-session", "-t", "main"); err != nil {
		cmd := exec.Command("tmux", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", m.UserDir)
		cmd.Env = m.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			m.c.t.Fatalf("tmux on %s: %v\n%s", m.Name, err, out)
		}
	}
	m.MustST("", "up")
	out, err := m.Tmux.Run("display-message", "-p", "-t", "main:0.0", "#{pane_id}")
	if err != nil {
		m.c.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// KillDaemon ends the machine's st daemon by its pid (SIGKILL).
func (m *Machine) KillDaemon() {
	pid := DaemonPID(m.Home)
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	WaitGone(pid, 2*time.Second)
	os.Remove(filepath.Join(m.Home, "st.pid"))
}

// Capture returns what a pane of this machine shows.
func (m *Machine) Capture(pane string) string {
	out, _ := m.Tmux.Run("capture-pane", "-p", "-J", "-t", pane)
	return out
}

// TaskFile writes a task file in the cluster's folder and returns its path.
func (c *Cluster) TaskFile(name, text string) string {
	c.t.Helper()
	p := filepath.Join(c.Dir, "tasks", name)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// Bin is the st binary the cluster runs.
func (m *Machine) Bin() string { return m.c.Bin }

// PathEnv is PATH with st's folder first, for commands typed into new
// windows (tmux does not give them the server's PATH; see
// reference/real-agents.md, PATH in new windows).
func (m *Machine) PathEnv() string {
	return "PATH=" + filepath.Dir(m.c.Bin) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// HandAgent starts `st agent sim` in a new window of the machine's main
// session, as a person would, and returns its pane once st has seen its
// hooks.
func (m *Machine) HandAgent(name string) string {
	m.c.t.Helper()
	out, err := m.Tmux.Run("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "main", "-n", name, "-e", m.PathEnv(), "-e", "ST_HOME="+m.Home, m.c.Bin, "agent", "sim")
	if err != nil {
		m.c.t.Fatal(err)
	}
	pane := strings.TrimSpace(out)
	WaitFor(m.c.t, 20*time.Second, func() (bool, string) {
		ls, _ := m.ST("ls")
		return strings.Contains(ls, pane+" sim"), ls + "\n" + m.Capture(pane)
	})
	return pane
}
