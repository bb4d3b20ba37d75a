package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
)

// qc is a client of one st and one tmux server.
var qc = New("/home/u/.st", "/tmp/tmux-0/default,123,0")

func TestQueueKeepsAReportUntilTaken(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if _, err := qc.QueueReport(api.DoneRequest{Pane: "%7", Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	req, done, ok := qc.TakeQueued("%7")
	if !ok || req.Summary != "did it" || req.Pane != "%7" {
		t.Fatalf("TakeQueued = %+v, %v", req, ok)
	}
	done()
	if _, _, ok := qc.TakeQueued("%7"); ok {
		t.Fatal("the report is still queued after it was handed over")
	}
	if _, err := qc.QueueReport(api.DoneRequest{Pane: "../x", Summary: "s"}); err == nil {
		t.Fatal("a pane that is not %N was taken as a file name")
	}
}

// TestQueueKeepsReportsOfOtherServersApart: every tmux server has a %2,
// and one user may run several st at once (tests do, in parallel). A
// hook in another server's %2, or one that talks to another st, must
// neither take the report nor overwrite it with its own.
func TestQueueKeepsReportsOfOtherServersApart(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	otherServer := New("/home/u/.st", "/tmp/tmux-0/other,9,0")
	otherSt := New("/tmp/st-test/home", "/tmp/tmux-0/default,123,0")
	if _, err := qc.QueueReport(api.DoneRequest{Pane: "%2", Summary: "mine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := otherServer.QueueReport(api.DoneRequest{Pane: "%2", Summary: "theirs"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Client{"another tmux server": otherServer, "another st": otherSt} {
		if req, _, ok := c.TakeQueued("%2"); ok && req.Summary == "mine" {
			t.Errorf("a hook of %s took this server's report: %+v", name, req)
		}
	}
	if _, _, ok := otherSt.TakeQueued("%2"); ok {
		t.Error("a hook of another st took a report queued for a different st")
	}
	req, done, ok := qc.TakeQueued("%2")
	if !ok || req.Summary != "mine" {
		t.Fatalf("TakeQueued = %+v, %v; want this server's own report", req, ok)
	}
	done()
	if req, _, ok := otherServer.TakeQueued("%2"); !ok || req.Summary != "theirs" {
		t.Errorf("the other server's report = %+v, %v; want it kept", req, ok)
	}
}

// TestQueueRefusesAFolderOthersCanWrite: /tmp/st-UID made writable by
// others (another user could have made it first, and swap reports/ under
// st) is not used, neither to queue nor to take; reports go to a folder
// of this user's own with a random name instead, and are taken from there.
func TestQueueRefusesAFolderOthersCanWrite(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, err := qc.QueueReport(api.DoneRequest{Pane: "%3", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(baseDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := qc.TakeQueued("%3"); ok {
		t.Error("a report was taken from a folder others can write to")
	}
	path, err := qc.QueueReport(api.DoneRequest{Pane: "%4", Summary: "kept"})
	if err != nil {
		t.Fatalf("QueueReport with st-UID open to others: %v", err)
	}
	if strings.HasPrefix(path, baseDir()+"/") || !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(path))), filepath.Base(baseDir())+"-") {
		t.Errorf("queued at %s, want a fallback folder %s-*", path, baseDir())
	}
	req, done, ok := qc.TakeQueued("%4")
	if !ok || req.Summary != "kept" {
		t.Fatalf("TakeQueued from the fallback = %+v, %v", req, ok)
	}
	done()
}

// TestQueueFolderTakenByAnotherUser is the attack itself: another user
// makes /tmp/st-UID first (here a folder owned by nobody, 0700, so st can
// neither use nor enter it). Every report used to fail to queue; now each
// goes to this user's own random-named folder and is handed over. A
// fallback folder of another user is not used either.
func TestQueueFolderTakenByAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test needs root, to make a folder owned by another user (CI runs as root)")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const nobody = 65534
	if err := os.Mkdir(baseDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(baseDir(), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// A decoy fallback of the other user, with a report that must not be taken.
	decoy := baseDir() + "-decoy"
	if err := os.MkdirAll(filepath.Join(decoy, "reports"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(decoy, "reports", "5.json"), []byte(`{"pane":"%5","summary":"forged"}`), 0o600)
	for _, p := range []string{decoy, filepath.Join(decoy, "reports")} {
		os.Chown(p, nobody, nobody)
	}
	path, err := qc.QueueReport(api.DoneRequest{Pane: "%5", Summary: "mine"})
	if err != nil {
		t.Fatalf("QueueReport with st-UID taken by another user: %v", err)
	}
	if strings.HasPrefix(path, baseDir()+"/") || strings.HasPrefix(path, decoy) {
		t.Fatalf("queued at %s, in a folder this user does not own", path)
	}
	req, done, ok := qc.TakeQueued("%5")
	if !ok || req.Summary != "mine" {
		t.Fatalf("TakeQueued = %+v, %v; want this user's own report", req, ok)
	}
	done()
	if _, _, ok := qc.TakeQueued("%5"); ok {
		t.Fatal("a report was taken again (or the other user's forged one was)")
	}
}
