package machines

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestMachinesKindOnlyThereKnows (issue 33 item 5 across machines): beta's
// config.toml describes an agent kind (toy: a shell script with a prompt,
// a line of work and a question, no hooks) that alpha's does not. A
// coordinator on alpha starts it on beta: the machine that runs the agent
// decides which kinds exist there. Alpha's st worker list shows it with
// its kind and state, marked as read from its screen (beta's word), st
// worker wait ends with its report, st worker read shows it. A kind beta
// does not know either is refused by beta, naming beta's kinds; a name not
// of a kind's form is refused on alpha before beta is asked.
func TestMachinesKindOnlyThereKnows(t *testing.T) { eachWay(t, kindOnlyThereKnows) }

func kindOnlyThereKnows(t *testing.T, way string) {
	c := testutil.NewClusterWay(t, way)
	c.Extra = []string{"ST_HEARTBEAT=1s", "ST_PEER_RETRY=20s"}
	a, b := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	toy := filepath.Join(c.Dir, "beta", "toy.sh")
	if err := os.WriteFile(toy, []byte(toyScript), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "[agents.toy]\ntitle = \"Toy agent\"\nicon = \"▲\"\nprogram = \"" + toy + "\"\n" +
		"ready = [\"toy> \"]\nbusy = [\"working on it\"]\nprompt = [\"Allow this? [y/n]\"]\ninterrupt = \"C-c\"\n"
	if err := os.WriteFile(filepath.Join(b.Home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*testutil.Machine{a, b} {
		m.Login("acme")
	}
	pa := a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")

	task := c.TaskFile("toy.md", "ask\nreport: the toy did it on beta\n")
	out := must(t)(a.In(pa, "worker", "start", "--machine", "beta", "--agent", "toy", "--task", task, "--name", "toy1"))
	id := has(t, out, `(?m)^(beta/%\d+) toy1$`)[1]
	_, bpane, _ := strings.Cut(id, "/")

	// It asks on beta: alpha's list shows it waiting, of kind toy, marked
	// as read from its screen.
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, _ := a.In(pa, "worker", "list")
		return regexp.MustCompile(regexp.QuoteMeta(id) + `\s+toy1\s+toy\s+waiting \(screen\).*on beta`).MatchString(out),
			out + "\nbeta's window:\n" + b.Capture(bpane)
	})
	// A person on beta answers; its report ends alpha's wait.
	// (st worker wait returns at once for a worker that waits for a
	// person: it waits for the answer's turn to be seen first.)
	must(t)(b.Tmux.Run("send-keys", "-t", bpane, "y", "Enter"))
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, _ := a.In(pa, "worker", "list")
		return !regexp.MustCompile(regexp.QuoteMeta(id) + `\s+toy1\s+toy\s+waiting`).MatchString(out), out + "\nbeta's window:\n" + b.Capture(bpane)
	})
	wait, err := a.In(pa, "worker", "wait", id, "--timeout", "60s")
	if err != nil {
		t.Fatalf("st worker wait on alpha: %v\n%s\nbeta's window:\n%s", err, wait, b.Capture(bpane))
	}
	has(t, wait, regexp.QuoteMeta(id)+`\s+toy1\s+done\s+the toy did it on beta`)
	has(t, must(t)(a.In(pa, "worker", "list")), regexp.QuoteMeta(id)+`\s+toy1\s+toy\s+done \(screen\).*on beta`)
	has(t, must(t)(a.In(pa, "worker", "read", "beta/toy1")), `summary: the toy did it on beta`)
	// Beta's own list says the same of the worker it hosts.
	has(t, must(t)(b.ST("worker", "list", "--all")), `toy1\s+toy\s+done \(screen\).*worker of \S+ on alpha`)

	// A kind neither machine knows: beta refuses it, naming its kinds.
	out, err = a.In(pa, "worker", "start", "--machine", "beta", "--agent", "nosuch", "--task", task, "--name", "n1")
	refused(t, out, err, "nosuch", "toy", "sim")
	// A name not of a kind's form: refused on alpha.
	out, err = a.In(pa, "worker", "start", "--machine", "beta", "--agent", "../toy", "--task", task, "--name", "n2")
	refused(t, out, err, "not an agent kind's name")

	must(t)(a.In(pa, "worker", "stop", id, "--yes"))
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		ps, _ := b.Tmux.Run("list-panes", "-a", "-F", "#{pane_id}")
		return !regexp.MustCompile(`(?m)^` + bpane + `$`).MatchString(ps), "beta's worker pane is still there:\n" + ps
	})
}

// toyScript is an agent on screen with no hooks, as described.txtar's: a
// prompt, a line of work, a question when its task says ask; it reports
// through st (ST_BIN: the st of the machine it runs on).
const toyScript = `#!/bin/sh
sleep 1
while :; do
  printf 'toy> '
  IFS= read -r line || exit 0
  [ -n "$line" ] || continue
  echo "working on it"
  sleep 0.3
  task=$(printf '%s\n' "$line" | sed -n 's/^Your task is in the file \([^ ]*\) - .*/\1/p')
  if [ -n "$task" ]; then
    if grep -q '^ask' "$task"; then
      printf 'Allow this? [y/n] '
      read -r answer
      echo "you said $answer; working on it"
      sleep 0.3
    fi
    summary=$(sed -n 's/^report: //p' "$task")
    [ -z "$summary" ] || "$ST_BIN" worker done --summary "$summary" >/dev/null
  fi
  echo "done: $line"
done
`
