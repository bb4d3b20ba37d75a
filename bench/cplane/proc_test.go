package cplane

import (
	"bufio"
	"bytes"
	"fmt"
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

// beforeCommit is the last commit whose control plane kept its state in
// state.json: the "before" of the benchmarks.
const beforeCommit = "4f3877d"

var (
	beforeOnce sync.Once
	beforeDir  string // removed when the benchmarks end (TestMain)
	beforeBin  string
	beforeErr  error
)

// TestMain removes the st it built from beforeCommit, and the one
// BuildST built, when the benchmarks end.
func TestMain(m *testing.M) {
	testutil.Main(m, func() {
		if beforeDir != "" {
			os.RemoveAll(beforeDir)
		}
	})
}

// beforeST is the st of beforeCommit: ST_BENCH_BEFORE_ST when set, else
// built once from `git archive` of that commit in a temporary folder
// (nothing of the repository changes).
func beforeST(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("ST_BENCH_BEFORE_ST"); p != "" {
		return p
	}
	beforeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "st-before")
		if err != nil {
			beforeErr = err
			return
		}
		beforeDir = dir
		beforeBin, beforeErr = testutil.BuildSTAt(dir, beforeCommit)
	})
	if beforeErr != nil {
		b.Fatal(beforeErr)
	}
	return beforeBin
}

// cpProc is an `st control-plane serve` process.
type cpProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	data string
	url  string
	ca   string
	key  string // account acme's
	log  string

	// Set when watchMemory killed it: when, and its CPU time then.
	killedAt  time.Time
	cpuAtKill time.Duration
}

// watchMemory kills the process (its own pid) when its resident memory
// passes capMiB. The function it returns stops the watch and says at how
// many MiB it killed it (0: it did not).
func (p *cpProc) watchMemory(capMiB float64) func() float64 {
	stop, done := make(chan struct{}), make(chan float64, 1)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- 0
				return
			case <-t.C:
			}
			if rss, _ := p.mem(); rss > capMiB {
				p.cpuAtKill, p.killedAt = p.cpu(), time.Now()
				p.cmd.Process.Kill()
				done <- rss
				return
			}
		}
	}()
	var once sync.Once
	var got float64
	return func() float64 {
		once.Do(func() {
			close(stop)
			got = <-done
		})
		return got
	}
}

// startCP adds account acme in a new folder under dir and serves it with
// bin, with extra flags.
func startCP(b *testing.B, bin, dir string, extra ...string) *cpProc {
	b.Helper()
	p := &cpProc{data: filepath.Join(dir, "cp"), log: filepath.Join(dir, "cp.log")}
	out, err := exec.Command(bin, "control-plane", "account", "add", "acme", "--data", p.data).CombinedOutput()
	if err != nil {
		b.Fatalf("account add: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "key: "); ok {
			p.key = k
		}
	}
	logf, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	args := append([]string{"control-plane", "serve", "--data", p.data, "--listen", "127.0.0.1:0"}, extra...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = testutil.Env(os.Environ())
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { p.cmd.Wait(); close(p.done) }()
	b.Cleanup(p.stop)
	testutil.WaitFor(b, 30*time.Second, func() (bool, string) {
		u, err := os.ReadFile(filepath.Join(p.data, "url"))
		p.url = strings.TrimSpace(string(u))
		return err == nil && p.url != "", "no url file"
	})
	p.ca = filepath.Join(p.data, "ca.pem")
	return p
}

// stop ends the process (its own pid): SIGTERM, then SIGKILL after 10 s.
func (p *cpProc) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// cpu is the process's CPU time so far (user and system), from
// /proc/PID/stat.
func (p *cpProc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// After the command's name in parentheses: field 3 is the state;
	// utime and stime are fields 14 and 15, in clock ticks (100 a second).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// mem is the process's resident memory now and at its peak (VmRSS and
// VmHWM), in MiB.
func (p *cpProc) mem() (rss, hwm float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

// stats is a sample of durations, sorted (benchfig.Stats).
type stats = benchfig.Stats
