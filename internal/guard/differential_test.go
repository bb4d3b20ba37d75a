package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The differential test checks the guard against real bash. Each command
// runs in bash as the user nobody, in namespaces of its own (process ids,
// mounts, network, ipc, host name) with private /tmp, /var/tmp and
// /dev/shm, beside a real tmux server started for it (as nobody, the
// agent's server: $TMUX names it). A tmux on PATH logs the arguments bash
// really ran it with, then runs the real one. The guard must have refused,
// from the command's text, every command that
//   - stopped the server (it is gone, or no longer answers), or
//   - ran tmux with arguments the guard refuses when they are written
//     out plainly (its rules on what bash really ran).
// The reverse (refused, yet harmless) is allowed: the guard judges what a
// command may do. The server's pid is random, so that a command cannot
// guess it. Each command runs twice: beside a server of two sessions of
// random names, and beside a server whose only session, solo, has one
// pane (ending it ends the server). The guard is told each server as
// tmux listed it before the command ran, as the hook asks it.
//
// FuzzDifferential's corpus (testdata/fuzz/FuzzDifferential and the seeds
// below) runs as a normal test; go test -fuzz=FuzzDifferential fuzzes on.
// The corpus files named allowed-* are look-alikes: the guard must let
// them through (and they must leave the server running).
// It needs root (for the namespaces), unshare, setpriv, bash and tmux.

const diffSock = "/tmp/tmux-65534/default"

// diffScript runs as root in the new namespaces. Its input, on stdin, is
// one line per command: the pid to start after, a session name, a second
// session's name ("-" for none), and the command in base64. $1 is the
// format of the panes it lists for the guard.
const diffScript = `
set -e
format=$1
mount -t tmpfs -o size=1m,mode=0700 tmpfs /mnt
cat > /mnt/in
mount -t tmpfs -o size=16m,mode=1777 tmpfs /tmp
mount -t tmpfs -o size=1m,mode=1777 tmpfs /var/tmp
mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all env -i PATH=/tmp/w/bin:/usr/bin:/bin HOME=/tmp/w SHELL=/bin/sh "$@"; }
while read -r lastpid session second b64; do
  # What the last command left: killed (it can do nothing more), wiped.
  pkill -9 -u 65534 || true
  rm -rf /tmp/* /tmp/.[!.]* /var/tmp/* /dev/shm/* 2>/dev/null || true
  mkdir -p -m 0777 /tmp/w /tmp/w/bin
  mkdir -p /tmp/log
  printf '%s\n' '#!/bin/sh' \
    '{ printf argv; printf "\0%s" "${TMUX-<unset>}" "${TMUX_TMPDIR-<unset>}" "$@"; printf "\n"; } >> /tmp/log/tmux.log' \
    'exec /usr/bin/tmux "$@"' > /tmp/w/bin/tmux
  : > /tmp/log/tmux.log
  chmod 0755 /tmp/w/bin/tmux /tmp/w/bin
  chmod 0666 /tmp/log/tmux.log
  echo "$lastpid" > /proc/sys/kernel/ns_last_pid
  if [ "$second" = - ]; then
    out=$(asnobody /usr/bin/tmux -f /dev/null new-session -d -s "$session" -x 80 -y 24 'exec sleep 600' \; \
      display -p -t "$session:" '#{pid} #{pane_id}')
  else
    out=$(asnobody /usr/bin/tmux -f /dev/null new-session -d -s "$session" -x 80 -y 24 'exec sleep 600' \; \
      new-session -d -s "$second" 'exec sleep 600' \; display -p -t "$session:" '#{pid} #{pane_id}')
  fi
  pid=${out% *} pane=${out#* }
  panes=$(asnobody /usr/bin/tmux -u -S /tmp/tmux-65534/default list-panes -a -F "$format" | base64 -w0)
  args=$(tr '\0' ' ' < /proc/$pid/cmdline | base64 -w0)
  printf '%s' "$b64" | base64 -d > /mnt/cmd
  echo x >> /mnt/cmd
  set +e
  (cd /tmp/w && asnobody TMUX="/tmp/tmux-65534/default,$pid,0" TMUX_PANE="$pane" \
    sh -c 'ulimit -v 1048576; ulimit -u 512; exec timeout -s KILL 3 bash -c "${1%x}"' sh "$(cat /mnt/cmd)" \
    </dev/null >/dev/null 2>&1)
  # Jobs it left behind may still act: wait for them (up to 3 s). The
  # server and its two panes are the baseline; zombies (this shell does
  # not reap them) do not count.
  for i in $(seq 150); do
    [ "$(ps -u 65534 -o stat= | grep -cv '^Z')" -le 3 ] && break
    sleep 0.02
  done
  if kill -0 "$pid" 2>/dev/null && asnobody /usr/bin/tmux -S /tmp/tmux-65534/default list-sessions >/dev/null 2>&1; then
    state=ALIVE
  else
    state=DEAD
  fi
  set -e
  echo "=== $state $pid ${panes:-=} ${args:-=} $(base64 -w0 /tmp/log/tmux.log)"
done < /mnt/in
`

type diffResult struct {
	cmd  string
	died bool
	pid  int
	srv  Server     // the server before the command, as the hook would ask it
	tmux [][]string // each run of tmux: $TMUX, $TMUX_TMPDIR, its arguments
}

// inCI reports whether the tests run in CI (CI=true, as CI services set
// it), where a test that cannot run fails instead of skipping.
func inCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// canDiff says why the differential test cannot run here, or "".
func canDiff() string {
	if os.Getuid() != 0 {
		return "it needs root for its namespaces"
	}
	for _, p := range []string{"unshare", "setpriv", "bash", "tmux", "base64", "pkill", "timeout"} {
		if _, err := exec.LookPath(p); err != nil {
			return "it needs " + p
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--mount", "--net", "--ipc", "--uts", "--",
		"sh", "-c", "mount -t tmpfs tmpfs /mnt").CombinedOutput(); err != nil {
		return fmt.Sprintf("this machine gives no namespaces (unshare: %v: %s)", err, out)
	}
	return ""
}

// runInBash runs each command through diffScript twice, beside each
// server: in two sets of namespaces side by side when there are several.
func runInBash(t testing.TB, cmds []string) []diffResult {
	t.Helper()
	twice := make([]string, 0, 2*len(cmds))
	for _, c := range cmds {
		twice = append(twice, c, c)
	}
	cmds = twice
	if len(cmds) < 8 {
		return runBatch(t, cmds)
	}
	half := len(cmds) / 2 &^ 1 // each command's two runs stay in one batch
	var a, b []diffResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		a = runBatch(t, cmds[:half])
	}()
	b = runBatch(t, cmds[half:])
	<-done
	return append(a, b...)
}

// runBatch runs commands through diffScript, in one set of namespaces.
func runBatch(t testing.TB, cmds []string) []diffResult {
	t.Helper()
	var in strings.Builder
	for i, c := range cmds {
		// bash -c reads its text up to the first NUL; the command
		// itself ends there too (see the x in diffScript). Every other
		// run is beside a server of one session, solo (runInBash runs
		// each command twice in a row).
		session, second := fmt.Sprintf("s%06d", rand.IntN(1000000)), fmt.Sprintf("t%06d", rand.IntN(1000000))
		if i%2 == 1 {
			session, second = "solo", "-"
		}
		fmt.Fprintf(&in, "%d %s %s %s\n", 20000+rand.IntN(30000), session, second, base64.StdEncoding.EncodeToString([]byte(c)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(cmds))*10*time.Second+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--mount",
		"--net", "--ipc", "--uts", "--", "sh", "-c", diffScript, "sh", PaneFormat())
	cmd.Stdin = strings.NewReader(in.String())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Errorf("the namespaces for bash: %v\n%s", err, errb.String())
		return nil
	}
	var res []diffResult
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "===" {
			continue
		}
		r := diffResult{died: f[1] == "DEAD"}
		r.pid, _ = strconv.Atoi(f[2])
		if len(f) > 4 {
			panes, _ := base64.StdEncoding.DecodeString(f[3])
			args, _ := base64.StdEncoding.DecodeString(f[4])
			srv, err := ParseServer(string(panes))
			if err != nil || len(srv.Panes) == 0 {
				t.Errorf("the server's panes %q: %v", panes, err)
			}
			srv.Args = strings.TrimSpace(string(args))
			r.srv = srv
		}
		if len(f) > 5 {
			log, _ := base64.StdEncoding.DecodeString(f[5])
			for _, line := range strings.Split(string(log), "\n") {
				if rest, ok := strings.CutPrefix(line, "argv\x00"); ok {
					r.tmux = append(r.tmux, strings.Split(rest, "\x00"))
				}
			}
		}
		if len(res) < len(cmds) {
			r.cmd = cmds[len(res)]
		}
		res = append(res, r)
	}
	if len(res) != len(cmds) {
		t.Errorf("bash ran %d of %d commands:\n%s\n%s", len(res), len(cmds), out.String(), errb.String())
	}
	return res
}

// diffContext is the guard's view of the agent in diffScript.
func diffContext(r diffResult) Context {
	return Context{TmuxSocket: fmt.Sprintf("%s,%d,0", diffSock, r.pid), UID: 65534, Cwd: "/tmp/w", Ask: answers(r.srv)}
}

// plainly writes a tmux run out as a command, with the environment it saw.
func plainly(run []string) string {
	var b strings.Builder
	if run[0] == "<unset>" {
		b.WriteString("unset TMUX; ")
	} else {
		b.WriteString("TMUX=" + shQuote(run[0]) + " ")
	}
	if run[1] != "<unset>" {
		b.WriteString("TMUX_TMPDIR=" + shQuote(run[1]) + " ")
	}
	b.WriteString("tmux")
	for _, a := range run[2:] {
		b.WriteString(" " + shQuote(a))
	}
	return b.String()
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// judgeDiff fails the test when bash did what the guard let through.
func judgeDiff(t testing.TB, r diffResult) (refused bool) {
	t.Helper()
	g := diffContext(r)
	verdict := Check(r.cmd, g)
	if lookAlikes[r.cmd] && (verdict != "" || r.died) {
		t.Errorf("the look-alike %q: the guard said %q, the server died=%v", r.cmd, verdict, r.died)
	}
	if verdict != "" {
		return true
	}
	if r.died {
		t.Errorf("the guard let %q through, and it stopped the tmux server (tmux ran as %q)", r.cmd, r.tmux)
	}
	for _, run := range r.tmux {
		if len(run) < 2 {
			continue
		}
		if why := Check(plainly(run), g); why != "" {
			t.Errorf("the guard let %q through, and bash ran %s, which it refuses: %s", r.cmd, plainly(run), why)
		}
	}
	return false
}

// diffSeeds are commands that stop the server in ways the guard must see,
// and harmless ones.
var diffSeeds = []string{
	"tmux kill-server", "tmux ls", "echo tmux kill-server", "tmux -L other kill-server",
	"tmux kill-session -a; tmux kill-session",
	"tmux $(echo kill-server)", "$(printf '%s' tm ux) kill-server", "tmux kill-${X:-server}",
	"c=KILL-SERVER; tmux ${c,,}", "read c <<< kill-server; tmux $c", "printf -v c kill-server; tmux $c",
	`set -- tmux kill-server; "$@"`, "IFS=_; c=tmux_kill-server; $c",
	". <(echo tmux kill-server)", "bash <(echo tmux kill-server)", "source /dev/stdin <<< 'tmux kill-server'",
	`find /usr/bin -name tmux -exec {} kill-server \;`, `echo tmux kill-server | xargs -I{} sh -c '{}'`,
	`awk 'BEGIN{system("tmux kill-server")}'`, "fuser -k " + diffSock, "unshare tmux kill-server",
	"ln -s " + diffSock + " /tmp/s; tmux -S /tmp/s kill-server",
	"cat <<'E'#x\nE#x\ntmux kill-server\nE\n",
	"kill -9 -1", "pkill tmux", "kill $(pgrep tmux)", "pgrep tmux | xargs kill",
	"sleep 0.2 && tmux kill-server &", "(tmux kill-server)", "f() { tmux kill-server; }; f",
	"alias t=tmux\nt kill-server", "eval 'tmux kill-server'", "bash -c 'tmux kill-server'",
	"tmux run-shell 'tmux kill-server'", "tmux if-shell true kill-server", "tmux send-keys -t 1 'tmux kill-server' Enter",
	"tmux set -g exit-unattached on", "tmux display -p '#(tmux kill-server)'",
	"TMUX= tmux kill-server", "env -u TMUX tmux kill-server", "tmux -S " + diffSock + " kill-server",
	"cd /tmp/tmux-65534 && tmux -S ./default kill-server", "rm -rf /tmp/tmux-65534",
	"git commit -m 'tmux kill-server'", "grep -rn kill-server .", "tmux list-panes -a -F '#{pane_id}'",
	"for i in 1 2; do echo $i; done", "x=$(date); echo $x", "ls -la && pwd",
}

func FuzzDifferential(f *testing.F) {
	if why := canDiff(); why != "" {
		if inCI() {
			// CI runs as root in a fresh clone, with namespaces: a skip
			// there would count a test that did not run as a pass.
			f.Fatal("the differential test must run in CI (CI is set), and cannot: " + why +
				"; run CI as root on a machine that gives namespaces (unshare)")
		}
		f.Skip("the differential test cannot run here: " + why)
	}
	for _, s := range diffSeeds {
		f.Add(s)
	}
	// As a test (not fuzzing), the seeds and the corpus run in bash in
	// one batch, one set of namespaces, for speed; each is then judged as
	// its own case.
	lookAlikes = map[string]bool{}
	entries, _ := os.ReadDir("testdata/fuzz/FuzzDifferential")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "allowed-") {
			for _, c := range corpusFile(f, "testdata/fuzz/FuzzDifferential/"+e.Name()) {
				lookAlikes[c] = true
			}
		}
	}
	if len(lookAlikes) < 5 {
		f.Fatalf("only %d look-alikes in the corpus", len(lookAlikes))
	}
	var batch map[string][]diffResult
	if !fuzzing() {
		cmds := append(append([]string(nil), diffSeeds...), corpus(f, "testdata/fuzz/FuzzDifferential")...)
		batch = map[string][]diffResult{}
		refused := 0
		for _, r := range runInBash(f, cmds) {
			batch[r.cmd] = append(batch[r.cmd], r)
			if Check(r.cmd, diffContext(r)) != "" {
				refused++
			}
		}
		f.Logf("%d commands ran in bash, each beside both servers; the guard refused %d of the %d runs", len(cmds), refused, 2*len(cmds))
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if rs, ok := batch[cmd]; ok {
			for _, r := range rs {
				judgeDiff(t, r)
			}
			return
		}
		if len(cmd) > 4096 || strings.IndexByte(cmd, 0) >= 0 {
			return // bash would not see it whole
		}
		for _, r := range runInBash(t, []string{cmd}) {
			judgeDiff(t, r)
		}
	})
}

func fuzzing() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

// lookAlikes are the corpus's allowed-* commands.
var lookAlikes map[string]bool

// corpus reads the string inputs of a fuzz corpus folder.
func corpus(t testing.TB, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, corpusFile(t, dir+"/"+e.Name())...)
	}
	return out
}

// corpusFile reads the string inputs of one corpus file.
func corpusFile(t testing.TB, file string) []string {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "string("); ok {
			if s, err := strconv.Unquote(strings.TrimSuffix(rest, ")")); err == nil {
				out = append(out, s)
			}
		}
	}
	return out
}
