package faults

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
)

// TestCorruptRunJSON cuts a run.json in half while st is down, starts st
// again, and checks what happens and what the user sees: st starts,
// the bad file is not overwritten (not by the start, not by new work in
// the same pane, not by a worker of that run reporting), a copy of it is
// kept beside it, and a message names the file where the user looks:
// st up, st status, or st worker list. The daemon's log names it too.
// CI and scripts/faults: 1 trial.
func TestCorruptRunJSON(t *testing.T) {
	w := newWorld(t, "")
	w.up()
	a := w.startWorkers(1, 1, w.writeFile("a.md", "summary: reported a\n"), "a")[0]
	b := w.startWorkers(1, 1, w.writeFile("b.md", "sleep: 600s\n"), "b")[0]
	w.must(w.st(w.coord, "worker", "wait", a.ID, "--timeout", "60s"))
	rs := w.runs()
	if len(rs) != 1 {
		t.Fatalf("%d runs on disk", len(rs))
	}
	path := filepath.Join(w.home, "orch", rs[0].ID, "run.json")
	w.must(w.st(w.coord, "down"))

	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := append(append([]byte(nil), good[:len(good)/2]...), "\x00\x00garbage"...)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}

	losses := 0
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		losses++
	}
	upOut := w.must(w.st(w.coord, "up"))
	w.notePid()
	statusOut := w.must(w.st(w.coord, "status"))
	listOut, _ := run(w.st(w.coord, "worker", "list", "--all"))
	t.Logf("what the user sees after st up with a corrupt %s:\n$ st up\n%s$ st status\n%s$ st worker list --all\n%s", path, upOut, statusOut, listOut)

	// A worker of the skipped run reports; new work starts in the same pane.
	doneOut, doneErr := run(w.st(b.ID, "worker", "done", "--summary", "b after the corruption", "--retry", "2s"))
	t.Logf("$ st worker done (in the pane of a worker of the skipped run): %v\n%s", doneErr, doneOut)
	if doneErr == nil {
		fail("st worker done of a worker of the unreadable run succeeded: where did the report go?\n%s", doneOut)
	}
	c := w.startWorkers(1, 1, w.writeFile("c.md", "summary: reported c\n"), "c")[0]
	w.must(w.st(w.coord, "worker", "wait", c.ID, "--timeout", "60s"))

	// st down and up again: still not overwritten.
	w.must(w.st(w.coord, "down"))
	w.up()

	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, bad) {
		fail("%s was overwritten (%v)", path, err)
	}
	copies, _ := filepath.Glob(path + ".corrupt-*")
	if len(copies) == 0 {
		fail("no copy of %s kept", path)
	}
	for _, cp := range copies {
		if data, err := os.ReadFile(cp); err != nil || !bytes.Equal(data, bad) {
			fail("copy %s differs from the bad file (%v)", cp, err)
		}
	}
	t.Logf("copies after two starts: %v", copies)
	log, _ := os.ReadFile(filepath.Join(w.home, "daemon.log"))
	if !strings.Contains(string(log), path) {
		fail("the daemon's log does not name %s:\n%s", path, log)
	}
	if rs := w.runs(); len(rs) != 1 || rs[0].ID == filepath.Base(filepath.Dir(path)) {
		fail("want the new run beside the unreadable one, got %d readable runs", len(rs))
	}
	vs, _ := w.list()
	for _, v := range vs {
		if v.Name == "c" && v.State != api.Done {
			fail("new work after the corruption: c is %s", v.State)
		}
	}

	// What the user sees: a message naming the file.
	seen := upOut + statusOut + listOut
	if !strings.Contains(seen, path) {
		fail("neither st up, st status nor st worker list names %s; only daemon.log does. They said:\n%s", path, seen)
	}
	report(t, "corrupt-run-json", 1, losses, "things wrong: the file overwritten, no copy, or no message naming it")
}
