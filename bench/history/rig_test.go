package history

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/testutil"
)

// beforeCommit is the last commit whose daemon read every run.json under
// $ST_HOME/orch at its start: the "before".
const beforeCommit = "aed98f3"

// beforeST is the st of beforeCommit: ST_BENCH_BEFORE_ST when set, else
// built from `git archive` of that commit in a temporary folder (nothing
// of the repository changes), removed when the benchmark ends.
func beforeST(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("ST_BENCH_BEFORE_ST"); p != "" {
		return p
	}
	dir, err := os.MkdirTemp("", "st-before")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := testutil.BuildSTAt(dir, beforeCommit)
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// rig is a private tmux server with one session (a plain sh), and an
// ST_HOME of its own for each daemon started on it.
type rig struct {
	b     *testing.B
	dir   string
	tm    *testutil.Tmux
	env   []string
	pane  string // the session's first pane
	tvar  string // $TMUX of that pane
	homes int
}

func newRig(b *testing.B) *rig {
	b.Helper()
	r := &rig{b: b, dir: testutil.ShortTempDir(b)}
	tdir := filepath.Join(r.dir, "t")
	for _, d := range []string{tdir, filepath.Join(r.dir, "home"), filepath.Join(r.dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	r.tm = testutil.NewTmux(b, tdir)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ST_") {
			base = append(base, kv)
		}
	}
	r.env = testutil.Env(base, "TMUX_TMPDIR="+tdir, "HOME="+filepath.Join(r.dir, "home"), "TMPDIR="+filepath.Join(r.dir, "tmp"), "ST_WEB_PORT=auto")
	os.MkdirAll(filepath.Dir(r.tm.Socket), 0o700)
	cmd := exec.Command("tmux", "-S", r.tm.Socket, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", r.dir, "sh")
	cmd.Env = r.env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v\n%s", err, out)
	}
	out, err := r.tm.Run("display-message", "-p", "-t", "main:", "#{pane_id} #{pid}")
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		b.Fatalf("display-message: %q %v", out, err)
	}
	r.pane, r.tvar = f[0], r.tm.Socket+","+f[1]+",0"
	return r
}

// home makes a new, empty ST_HOME.
func (r *rig) home() string {
	r.homes++
	h := filepath.Join(r.dir, fmt.Sprintf("h%d", r.homes))
	if err := os.MkdirAll(h, 0o700); err != nil {
		r.b.Fatal(err)
	}
	return h
}

// st runs bin with ST_HOME home, as typed in pane ("" for outside tmux).
func (r *rig) st(bin, home, pane string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append([]string(nil), r.env...), "ST_HOME="+home,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if pane != "" {
		cmd.Env = append(cmd.Env, "TMUX="+r.tvar, "TMUX_PANE="+pane)
	}
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("st %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (r *rig) must(bin, home, pane string, args ...string) string {
	r.b.Helper()
	out, err := r.st(bin, home, pane, args...)
	if err != nil {
		r.b.Fatal(err)
	}
	return out
}

// daemonPID is the pid in home's st.pid.
func daemonPID(b *testing.B, home string) int {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(home, "st.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		b.Fatalf("st.pid: %q %v", data, err)
	}
	return pid
}

// down stops home's daemon (st down) and waits for its process to go;
// one that does not go is killed by its pid.
func (r *rig) down(bin, home string) {
	r.b.Helper()
	pid := daemonPID(r.b, home)
	r.st(bin, home, "", "down")
	if !testutil.WaitGone(pid, 20*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		testutil.WaitGone(pid, 5*time.Second)
	}
}

// procKB is a field of /proc/PID/status in KiB (VmRSS, VmHWM).
func procKB(b *testing.B, pid int, key string) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// scaled reports a figure beside its floor (the same figure at 1 run)
// and their ratio, as name, name_floor and name_ratio.
func scaled(b *testing.B, name string, v, floor float64, unit string) {
	benchfig.Figure(b, name, v, unit)
	if floor > 0 {
		benchfig.Figure(b, name+"_floor", floor, unit)
		benchfig.Figure(b, name+"_ratio", v/floor, "x")
	}
}
