package webui

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/testutil"
)

// daemon is a real st daemon of a private ST_HOME on a private tmux
// server whose first pane (a plain sh) is the coordinator. Cleanup stops
// the daemon by its pid and the server.
type daemon struct {
	b     *testing.B
	bin   string
	dir   string
	env   []string
	pane  string
	tvar  string
	tm    *testutil.Tmux
	task  string
	state string // the web UI's /st/api/state with its token
}

func startDaemon(b *testing.B) *daemon {
	b.Helper()
	d := &daemon{b: b, bin: testutil.BuildST(b), dir: testutil.ShortTempDir(b)}
	tdir := filepath.Join(d.dir, "t")
	for _, dir := range []string{tdir, filepath.Join(d.dir, "home"), filepath.Join(d.dir, "tmp")} {
		os.MkdirAll(dir, 0o700)
	}
	d.tm = testutil.NewTmux(b, tdir)
	os.MkdirAll(filepath.Dir(d.tm.Socket), 0o700)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ST_") {
			base = append(base, kv)
		}
	}
	home := filepath.Join(d.dir, "h")
	d.env = testutil.Env(base, "ST_HOME="+home, "ST_WEB_PORT=auto", "TMUX_TMPDIR="+tdir, "HOME="+filepath.Join(d.dir, "home"),
		"TMPDIR="+filepath.Join(d.dir, "tmp"), "PATH="+filepath.Dir(d.bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd := exec.Command("tmux", "-S", d.tm.Socket, "-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "200", "-y", "50", "-c", d.dir, "sh")
	cmd.Env = d.env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v\n%s", err, out)
	}
	out, err := d.tm.Run("display-message", "-p", "-t", "bench:", "#{pane_id} #{pid}")
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		b.Fatalf("display-message: %q %v", out, err)
	}
	d.pane, d.tvar = f[0], d.tm.Socket+","+f[1]+",0"
	d.task = filepath.Join(d.dir, "task.md")
	os.WriteFile(d.task, []byte("sleep: 600s\n"), 0o644)
	d.st("up")
	pid := d.pid()
	b.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGTERM)
		if !testutil.WaitGone(pid, 20*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	u, err := url.Parse(strings.TrimSpace(d.st("web")))
	if err != nil {
		b.Fatal(err)
	}
	d.state = fmt.Sprintf("%s://%s/st/api/state?token=%s", u.Scheme, u.Host, u.Query().Get("token"))
	return d
}

func (d *daemon) pid() int {
	data, _ := os.ReadFile(filepath.Join(d.getenv("ST_HOME"), "st.pid"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		d.b.Fatalf("st.pid holds %q", data)
	}
	return pid
}

func (d *daemon) getenv(k string) string {
	for i := len(d.env) - 1; i >= 0; i-- {
		if key, v, _ := strings.Cut(d.env[i], "="); key == k {
			return v
		}
	}
	return ""
}

// st runs st as typed in the coordinator's pane.
func (d *daemon) st(args ...string) string {
	d.b.Helper()
	cmd := exec.Command(d.bin, args...)
	cmd.Env = append(append([]string(nil), d.env...), "TMUX="+d.tvar, "TMUX_PANE="+d.pane)
	cmd.Dir = d.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.b.Fatalf("st %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// grow starts sim workers until there are n, ten at a time.
func (d *daemon) grow(from, n int) {
	d.b.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for i := from; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			d.st("worker", "start", "--agent", "sim", "--task", d.task, "--name", fmt.Sprintf("w%d", i))
		}(i)
	}
	wg.Wait()
}

// daemonState is /st/api/state of a real daemon with 10 and then 100 sim
// workers (and their coordinator, a shell, which is no agent): the
// body's size and the median of 30 fetches, by number of workers.
func daemonState(b *testing.B) map[int][2]float64 {
	d := startDaemon(b)
	out := map[int][2]float64{}
	have := 0
	for _, n := range []int{10, 100} {
		d.grow(have, n)
		have = n
		size, ts := stateTimes(b, d.state, 30)
		if want := fmt.Sprintf(`"name":"w%d"`, n-1); !strings.Contains(fetch(b, d.state), want) {
			b.Fatalf("the state of the daemon with %d workers does not name w%d", n, n-1)
		}
		out[n] = [2]float64{float64(size), benchfig.Median(durations(ts))}
		fmt.Printf("a real daemon with %d sim workers: state %d bytes in %.2f ms (median of %d)\n", n, size, out[n][1], len(ts))
	}
	return out
}
