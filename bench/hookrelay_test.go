package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/tmux"
)

// A hook event speaks only for the pane its process runs in: st takes an
// event about pane P only from a process whose parents include P's first
// process (internal/daemon hookcheck.go; docs/security.md, "a hook event").
// So a benchmark that ends or starts a worker's turn with a hook sends it
// from inside the worker's pane, as an agent's hook is sent: through a
// hook relay, a small shell loop that the worker's sim runs as a tool call
// (a `run:` line of its task) and so is the sim's child.
//
// The relay blocks reading a FIFO (go). The benchmark writes the event's
// name there; the relay then runs `st hook sim EVENT` with the payload
// the benchmark wrote beforehand (EVENT.json), and writes `EVENT STATUS`
// to a second FIFO (ack) when that process has ended. The write to go is
// the start of a timed interval: what follows it is the relay's wake-up
// (a blocked read returning, a few µs), the shell's fork and exec of the
// st hook process (in place of the benchmark's own exec of it before the
// check), that process, the daemon (now with the check's walk up /proc
// from the sender to the pane's first process) and whatever the figure
// waits for. No tmux command is in it: send-keys would add a round trip
// to tmux and the agent's key handling, which an agent's hook does not
// pass through.
//
// The word version instead of an event runs a bare `st version`: timed
// the same way (versionTime), it is the relay's own floor, to hold beside
// a bare `st version` the benchmark starts itself.
//
// The benchmark holds both FIFOs open read-write, so that no open blocks:
// a write to go waits in the pipe until the relay reads it, and the
// relay's writes to ack find a reader. Closing go (end) gives the relay
// an end of file: it exits 0, and the sim's tool call, and its turn, end
// as an agent's do (PostToolUse, Stop).
const relayScript = `# st's benchmark hook relay: see bench/hookrelay_test.go.
d=$1 st=$2
echo "ready 0" >"$d/ack"
while read -r ev <"$d/go"; do
	case $ev in
	version) "$st" version >"$d/$ev.out" 2>&1 ;;
	*) "$st" hook sim "$ev" <"$d/$ev.json" >"$d/$ev.out" 2>&1 ;;
	esac
	echo "$ev $?" >"$d/ack"
done
`

// hookRelay is the benchmark's end of one relay.
type hookRelay struct {
	dir  string
	goF  *os.File
	ack  *os.File
	acks *bufio.Reader
}

// newHookRelay makes a relay's folder (under parent, named name) with
// its FIFOs and script, for st binary bin. task is the line of a sim's
// task file that starts the relay in the sim's pane.
func newHookRelay(b *testing.B, parent, name, bin string) (h *hookRelay, task string) {
	b.Helper()
	h = &hookRelay{dir: filepath.Join(parent, name)}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for _, f := range []string{"go", "ack"} {
		if err := syscall.Mkfifo(filepath.Join(h.dir, f), 0o600); err != nil {
			b.Fatalf("mkfifo %s: %v", f, err)
		}
	}
	script := filepath.Join(h.dir, "relay.sh")
	if err := os.WriteFile(script, []byte(relayScript), 0o644); err != nil {
		b.Fatal(err)
	}
	var err error
	if h.goF, err = os.OpenFile(filepath.Join(h.dir, "go"), os.O_RDWR, 0); err != nil {
		b.Fatal(err)
	}
	if h.ack, err = os.OpenFile(filepath.Join(h.dir, "ack"), os.O_RDWR, 0); err != nil {
		b.Fatal(err)
	}
	h.acks = bufio.NewReader(h.ack)
	b.Cleanup(h.end)
	return h, "run: " + tmux.ShellJoin([]string{"sh", script, h.dir, bin})
}

// taskFile writes a task file for a sim that runs the relay, in h's folder.
func (h *hookRelay) taskFile(b *testing.B, task string) string {
	b.Helper()
	p := filepath.Join(h.dir, "relay-task.md")
	if err := os.WriteFile(p, []byte(task+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// ready waits for the relay's first word: it runs, in the pane.
func (h *hookRelay) ready(b *testing.B, within time.Duration) {
	b.Helper()
	if line, err := h.readAck(within); err != nil || line != "ready 0" {
		b.Fatalf("the hook relay in %s did not start within %s (%q, %v): is its sim running its task?", h.dir, within, line, err)
	}
}

// readAck reads one line of ack, waiting at most d.
func (h *hookRelay) readAck(d time.Duration) (string, error) {
	if err := h.ack.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	line, err := h.acks.ReadString('\n')
	return strings.TrimSpace(line), err
}

// fire sends event about the relay's pane with payload on its stdin, from
// the relay, and returns when the st hook process has ended: start is the
// write to go (see relayScript), end when the benchmark read the relay's
// ack. A hook that st refuses still exits 0 (a hook never stops its
// agent): the caller sees the refusal in what st does, and its words in
// EVENT.out (out).
func (h *hookRelay) fire(b *testing.B, event, payload string) (start, end time.Time) {
	b.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, event+".json"), []byte(payload), 0o600); err != nil {
		b.Fatal(err)
	}
	return h.send(b, event)
}

// versionTime is a bare `st version` started by the relay, from the write
// that releases it to the benchmark's read of its end.
func (h *hookRelay) versionTime(b *testing.B) time.Duration {
	b.Helper()
	start, end := h.send(b, "version")
	return end.Sub(start)
}

// send writes word to the relay and reads its ack.
func (h *hookRelay) send(b *testing.B, word string) (start, end time.Time) {
	b.Helper()
	start = time.Now()
	if _, err := h.goF.WriteString(word + "\n"); err != nil {
		b.Fatalf("hook relay %s: %v", h.dir, err)
	}
	line, err := h.readAck(30 * time.Second)
	end = time.Now()
	if err != nil || line != word+" 0" {
		b.Fatalf("hook relay %s: %s: %q (%v)\n%s", h.dir, word, line, err, h.out(word))
	}
	return start, end
}

// out is what the relay's last run of word (an event, or version) printed.
func (h *hookRelay) out(word string) string {
	data, _ := os.ReadFile(filepath.Join(h.dir, word+".out"))
	return string(data)
}

// end closes the benchmark's ends: the relay reads an end of file and
// exits, and its sim's turn ends. It may be called more than once.
func (h *hookRelay) end() {
	if h.goF != nil {
		h.goF.Close()
		h.goF = nil
	}
	if h.ack != nil {
		h.ack.Close()
		h.ack = nil
	}
}

// endAndSettle ends relays, each in its sim worker's pane (panes[i]), and
// waits until each sim shows its turn over (its footer back to "? for
// shortcuts"), so that what follows sees the workers idle at their box
// as before the relays.
func endAndSettle(b *testing.B, r *rig, relays []*hookRelay, panes []string) {
	b.Helper()
	for _, h := range relays {
		h.end()
	}
	for _, p := range panes {
		var screen string
		if !pollUntil(30*time.Second, func() bool {
			screen, _ = r.tmux("capture-pane", "-p", "-t", p)
			return strings.Contains(screen, "? for shortcuts")
		}) {
			b.Fatalf("the sim in %s did not end its turn after its hook relay ended; its screen:\n%s", p, screen)
		}
	}
}

// relayWorker is a sim worker whose pane runs a hook relay.
type relayWorker struct {
	id, session string
	relay       *hookRelay
}
