package faults

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/orch"
	"github.com/sophonz/st/internal/testutil"
)

// previousRelease is the commit of the st that the upgrade trials start
// from (main before issue 24); ST_FAULTS_OLD_COMMIT names another.
const previousRelease = "4f3877d"

// oldST builds the previous release's st from its commit (git archive of
// it into the test's temporary folder, which leaves the repository as it
// was).
func oldST(t *testing.T) string {
	t.Helper()
	commit := previousRelease
	if c := os.Getenv("ST_FAULTS_OLD_COMMIT"); c != "" {
		commit = c
	}
	bin, err := testutil.BuildSTAt(t.TempDir(), commit)
	if err != nil {
		t.Fatalf("the previous release: %v", err)
	}
	return bin
}

// TestUpgradeWithWorkersRunning: the previous release's st runs a run of
// workers (one has reported, one waits to report, others work), with
// its hooks installed; then `st down` with it, the binary replaced in
// place by this st (as an install does), and `st up` with the new one.
// Every run, worker, relation and report is kept; the agents started by
// the old st reach the new one through their hooks (one reports after the
// upgrade, and a wait sees it); the hooks the old st installed still
// pass st hooks status. CI: 1 trial; scripts/faults: 3.
func TestUpgradeWithWorkersRunning(t *testing.T) {
	n := trials(1, 3)
	old := oldST(t)
	losses := 0
	for trial := 0; trial < n; trial++ {
		losses += upgradeTrial(t, trial, old)
	}
	report(t, "upgrade-from-the-previous-release-with-workers-running", n, losses, "trials where a run, worker, relation, report or hook was lost across the upgrade")
}

func upgradeTrial(t *testing.T, trial int, old string) int {
	w := newWorld(t, "")
	defer w.close()
	newBin := w.bin
	// The installed st: the old one, where the new one will go.
	install := filepath.Join(w.dir, "bin", "st")
	os.MkdirAll(filepath.Dir(install), 0o700)
	copyFile(t, old, install)
	w.bin = install
	w.env = testutil.Env(w.env, "PATH="+filepath.Dir(install)+string(os.PathListSeparator)+os.Getenv("PATH"))
	w.up()
	w.must(w.st("", "hooks", "install"))
	release := filepath.Join(w.dir, "release")
	ws := w.startWorkers(2, 2, w.writeFile("long.md", "sleep: 600s\nsummary: never\n"), "long")
	ws = append(ws, w.startWorkers(1, 1, w.writeFile("short.md", "summary: short reported\n"), "short")...)
	ws = append(ws, w.startWorkers(1, 1, w.writeFile("held.md",
		fmt.Sprintf("run: i=0; until [ -e %s ] || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done\nsummary: held reported after the upgrade\n", release)), "held")...)
	waitFor(t, 30*time.Second, func() (bool, string) { return w.onDisk("short reported") == 1, "short has not reported" })
	w.waitPicture(len(ws))
	before, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	runsBefore := runIDs(w.runs())

	// The upgrade.
	w.must(w.st("", "down"))
	tmp := install + ".new"
	copyFile(t, newBin, tmp)
	if err := os.Rename(tmp, install); err != nil {
		t.Fatal(err)
	}
	w.up()
	var problems []string
	after, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := relations(after), relations(before); got != want {
		problems = append(problems, fmt.Sprintf("workers changed:\nbefore %s\nafter  %s", want, got))
	}
	if got := runIDs(w.runs()); got != runsBefore {
		problems = append(problems, fmt.Sprintf("runs %s, were %s", got, runsBefore))
	}
	if out, err := run(w.st("", "hooks", "status")); err != nil || !regexp.MustCompile(`(?i)claude.*installed`).MatchString(out) {
		problems = append(problems, fmt.Sprintf("st hooks status after the upgrade: %v\n%s", err, out))
	}
	// An agent the old st started reports to the new one.
	os.WriteFile(release, nil, 0o644)
	out, _ := run(w.st(w.coord, "worker", "wait", "held0", "--timeout", "60s"))
	if !regexp.MustCompile(`held0\s+.*done`).MatchString(out) {
		problems = append(problems, "the report after the upgrade did not reach the wait:\n"+out)
	}
	if v, _ := run(w.st("", "version")); !strings.Contains(v, "st ") {
		problems = append(problems, "st version after the upgrade: "+v)
	}
	for _, r := range w.runs() {
		if r.Format != 1 {
			problems = append(problems, fmt.Sprintf("run %s written by the new st has format %d", r.ID, r.Format))
		}
	}
	if len(problems) > 0 {
		t.Errorf("trial %d: %v\n%s", trial, problems, w.logTail())
		return 1
	}
	t.Logf("trial %d: %d workers, %d runs and every report kept across the upgrade; the held worker reported to the new st", trial, len(after), len(w.runs()))
	return 0
}

func runIDs(rs []*orch.Run) string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, fmt.Sprintf("%s(%d workers)", r.ID, len(r.Workers)))
	}
	return strings.Join(ids, ",")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
