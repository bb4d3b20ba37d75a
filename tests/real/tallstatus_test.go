package real

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/hooks"
)

// TestRealTallStatusLine: a real Claude Code whose user has a status line
// of six lines, passed through st's own (st statusline --then). Claude
// draws it under its box, below its mode line: st must still find the
// box, type the task into it, and see the worker finish. Before st knew a
// status line can be tall, the box was taken for old text and the task
// was never typed. ST_REAL_STATUS_LINES sets another height (a probe of
// what Claude draws, logged with the screen).
func TestRealTallStatusLine(t *testing.T) {
	if !slices.Contains(kinds(t), "claude") {
		t.Skip("claude is not in this run's kinds (ST_COMPAT_KIND)")
	}
	n := 6
	if v, err := strconv.Atoi(os.Getenv("ST_REAL_STATUS_LINES")); err == nil && v > 0 {
		n = v
	}
	r := newRig(t)
	r.installHooks()
	settings := filepath.Join(r.home, ".claude", "settings.json")
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf(`for i in $(seq 1 %d); do echo "status $i of %d"; done`, n, n)
	withUser := strings.Replace(string(data), `"theme": "dark",`, `"theme": "dark", "statusLine": {"type": "command", "command": `+jsonString(user)+`},`, 1)
	if withUser == string(data) {
		t.Fatalf("no theme key to put the status line beside in %s:\n%s", settings, data)
	}
	if err := os.WriteFile(settings, []byte(withUser), 0o600); err != nil {
		t.Fatal(err)
	}
	sl := hooks.InstallStatusLine(hooks.Options{Home: r.home, St: r.st, Getenv: func(k string) string {
		if k == "HOME" {
			return r.home
		}
		return ""
	}})
	if sl.Error != "" || !sl.Current || sl.User != user {
		t.Fatalf("installing st's status line: %+v", sl)
	}
	task := r.writeTask("tall.md", fmt.Sprintf("List the files.\nRUN: ls > /dev/null\nRUN: %s worker done --summary \"listed\"\nSAY: I listed them.\n", r.st))
	if o, e, code := r.st1("worker", "start", "--agent", "claude", "--task", task, "--name", "tall"); code != 0 {
		t.Fatalf("st worker start: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:tall"), r.daemonLog())
	}
	if o, e, code := r.st1("worker", "wait", "tall", "--timeout", "150s"); code != 0 || !strings.Contains(o, "done") {
		t.Fatalf("st worker wait: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:tall"), r.daemonLog())
	}
	screen := r.capture("main:tall")
	t.Logf("Claude's screen with a %d-line status line:\n%s", n, screen)
	if !strings.Contains(screen, fmt.Sprintf("status 1 of %d", n)) {
		t.Errorf("the user's status line is not on Claude's screen:\n%s", screen)
	}
}
