package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestMachineUnreachableMidRun: a coordinator on alpha has workers on
// beta; beta's st is killed (kill -9) in the middle of the run and comes
// back on a new address. The run goes on: every worker's report reaches
// the coordinator's `st worker wait`. A loss is a report that does not.
// The last worker holds its turn until beta's st is down, so that at
// least one report is made while beta's st is down, in every trial.
// CI: 1 trial of 4 workers; scripts/faults: 5.
func TestMachineUnreachableMidRun(t *testing.T) {
	n := trials(1, 5)
	const workers = 4
	losses := 0
	for trial := 0; trial < n; trial++ {
		losses += machineTrial(t, trial, workers)
	}
	report(t, fmt.Sprintf("machine-unreachable-mid-run-%d-workers", workers), n, losses, "a remote worker's report that never reached the coordinator's wait")
}

func machineTrial(t *testing.T, trial, workers int) int {
	c := testutil.NewCluster(t)
	c.Extra = []string{"ST_HEARTBEAT=1s"}
	alpha, beta := c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	alpha.Login("acme")
	beta.Login("acme")
	pa := alpha.Up()
	beta.Up()
	beta.MustST("", "orch", "accept-remote", "on")

	var ids []string
	release := filepath.Join(c.Dir, fmt.Sprintf("release-%d", trial))
	for i := 0; i < workers; i++ {
		// The reports fall around the kill: some before, some while beta's
		// st is down (the sim's st worker done retries), some after. The
		// last one waits for the test to let it go (a file), once beta's
		// st is down.
		text := fmt.Sprintf("sleep: %dms\nsummary: report %d\n", jitter(500, 4000), i)
		if i == workers-1 {
			text = fmt.Sprintf("run: i=0; until [ -e %s ] || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done\nsummary: report %d\n", release, i)
		}
		task := c.TaskFile(fmt.Sprintf("t%d-%d.md", trial, i), text)
		out := alpha.MustST(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", task, "--name", fmt.Sprintf("w%d", i))
		m := regexp.MustCompile(`(?m)^(beta/%\d+) w\d+$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("trial %d: start said %q", trial, out)
		}
		ids = append(ids, m[1])
	}
	time.Sleep(time.Duration(jitter(100, 1500)) * time.Millisecond) // a random moment of the run, not a wait
	beta.KillDaemon()
	// The held worker is still working, so alpha must see beta's workers
	// unreachable.
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, _ := alpha.In(pa, "worker", "list")
		return strings.Contains(out, "unreachable"), "alpha's list does not show beta's workers unreachable:\n" + out
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(jitter(500, 2500)) * time.Millisecond) // beta's st stays down a random while: the fault's timing
	beta.Up()

	out, err := alpha.In(pa, append([]string{"worker", "wait", "--timeout", "90s"}, ids...)...)
	if err != nil {
		t.Logf("trial %d: wait: %v", trial, err)
	}
	lost := 0
	for i, id := range ids {
		if !regexp.MustCompile(regexp.QuoteMeta(id) + fmt.Sprintf(`\s+w%d\s+done\s+report %d`, i, i)).MatchString(out) {
			t.Errorf("trial %d: the report of %s did not arrive:\n%s", trial, id, out)
			lost++
		}
	}
	return lost
}
