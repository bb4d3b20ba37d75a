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

// mustQueue queues a report and answers its digest.
func mustQueue(t *testing.T, c *Client, req api.DoneRequest) (path, digest string) {
	t.Helper()
	path, digest, err := c.QueueReport(req)
	if err != nil {
		t.Fatal(err)
	}
	return path, digest
}

func TestQueueKeepsAReportUntilTaken(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	_, digest := mustQueue(t, qc, api.DoneRequest{Pane: "%7", Summary: "did it"})
	req, done, ok := qc.TakeQueued("%7", digest)
	if !ok || req.Summary != "did it" || req.Pane != "%7" {
		t.Fatalf("TakeQueued = %+v, %v", req, ok)
	}
	done()
	if _, _, ok := qc.TakeQueued("%7", digest); ok {
		t.Fatal("the report is still queued after it was handed over")
	}
	if _, _, err := qc.QueueReport(api.DoneRequest{Pane: "../x", Summary: "s"}); err == nil {
		t.Fatal("a pane that is not %N was taken as a file name")
	}
}

// TestQueueTakesOnlyWhatTheDigestNames: the queue's folder is every
// sandbox's to write. A report is taken only under the digest of exactly
// what its file holds, for the pane that asks: not one another sandbox
// wrote over it or beside it, not under another digest, not another
// pane's.
func TestQueueTakesOnlyWhatTheDigestNames(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	path, digest := mustQueue(t, qc, api.DoneRequest{Pane: "%7", Summary: "mine"})
	_, other := mustQueue(t, qc, api.DoneRequest{Pane: "%7", Summary: "forged"})
	if _, _, ok := qc.TakeQueued("%7", other[:63]+"0"); ok {
		t.Error("a report was taken under a digest that is not its own")
	}
	if _, _, ok := qc.TakeQueued("%7", ""); ok {
		t.Error("a report was taken with no digest")
	}
	_, theirs := mustQueue(t, qc, api.DoneRequest{Pane: "%8", Summary: "theirs"})
	if _, _, ok := qc.TakeQueued("%7", theirs); ok {
		t.Error("pane %7 took the report of %8")
	}
	// Another sandbox writes its own text under the name of %7's report.
	if err := os.WriteFile(path, []byte(`{"pane":"%7","summary":"forged over it"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if req, _, ok := qc.TakeQueued("%7", digest); ok {
		t.Errorf("a file changed after it was queued was taken: %+v", req)
	}
	// Its own forgery is taken only under its own digest, which only its
	// writer's output names.
	if req, _, ok := qc.TakeQueued("%7", other); !ok || req.Summary != "forged" {
		t.Errorf("TakeQueued(other) = %+v, %v", req, ok)
	}
}

// TestQueueKeepsWhatTheHookTook: a report the hook took while st was
// down waits under ST_HOME for the pane's next hook; a later one replaces
// it; another pane's is not given.
func TestQueueKeepsWhatTheHookTook(t *testing.T) {
	home := t.TempDir()
	c := New(home, "/tmp/tmux-0/default,123,0")
	if _, _, ok := c.TakeKept("%4"); ok {
		t.Fatal("a report was kept before any was")
	}
	for _, s := range []string{"first", "second"} {
		if err := c.KeepReport(api.DoneRequest{Pane: "%4", Summary: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, ok := c.TakeKept("%5"); ok {
		t.Error("pane %5 was given %4's kept report")
	}
	if _, _, ok := New(home, "/tmp/tmux-0/other,9,0").TakeKept("%4"); ok {
		t.Error("a hook of another tmux server was given %4's kept report")
	}
	req, done, ok := c.TakeKept("%4")
	if !ok || req.Summary != "second" {
		t.Fatalf("TakeKept = %+v, %v; want the later report", req, ok)
	}
	if fi, err := os.Stat(filepath.Join(home, "reports")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the kept reports' folder: %v %v; want mode 0700", fi.Mode(), err)
	}
	done()
	if _, _, ok := c.TakeKept("%4"); ok {
		t.Error("the kept report is still there after it was handed over")
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
	_, mine := mustQueue(t, qc, api.DoneRequest{Pane: "%2", Summary: "mine"})
	_, theirs := mustQueue(t, otherServer, api.DoneRequest{Pane: "%2", Summary: "theirs"})
	for name, c := range map[string]*Client{"another tmux server": otherServer, "another st": otherSt} {
		if req, _, ok := c.TakeQueued("%2", mine); ok {
			t.Errorf("a hook of %s took this server's report: %+v", name, req)
		}
	}
	if _, _, ok := otherSt.TakeQueued("%2", theirs); ok {
		t.Error("a hook of another st took a report queued for a different st")
	}
	req, done, ok := qc.TakeQueued("%2", mine)
	if !ok || req.Summary != "mine" {
		t.Fatalf("TakeQueued = %+v, %v; want this server's own report", req, ok)
	}
	done()
	if req, _, ok := otherServer.TakeQueued("%2", theirs); !ok || req.Summary != "theirs" {
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
	_, d3 := mustQueue(t, qc, api.DoneRequest{Pane: "%3", Summary: "s"})
	if err := os.Chmod(baseDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := qc.TakeQueued("%3", d3); ok {
		t.Error("a report was taken from a folder others can write to")
	}
	path, d4, err := qc.QueueReport(api.DoneRequest{Pane: "%4", Summary: "kept"})
	if err != nil {
		t.Fatalf("QueueReport with st-UID open to others: %v", err)
	}
	if strings.HasPrefix(path, baseDir()+"/") || !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(path))), filepath.Base(baseDir())+"-") {
		t.Errorf("queued at %s, want a fallback folder %s-*", path, baseDir())
	}
	req, done, ok := qc.TakeQueued("%4", d4)
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
	forged := []byte(`{"pane":"%5","summary":"forged"}`)
	fname, _ := qc.queueName("%5", digestOf(forged))
	os.WriteFile(filepath.Join(decoy, "reports", fname), forged, 0o600)
	for _, p := range []string{decoy, filepath.Join(decoy, "reports"), filepath.Join(decoy, "reports", fname)} {
		os.Chown(p, nobody, nobody)
	}
	if _, _, ok := qc.TakeQueued("%5", digestOf(forged)); ok {
		t.Fatal("a report was taken from another user's folder")
	}
	path, digest, err := qc.QueueReport(api.DoneRequest{Pane: "%5", Summary: "mine"})
	if err != nil {
		t.Fatalf("QueueReport with st-UID taken by another user: %v", err)
	}
	if strings.HasPrefix(path, baseDir()+"/") || strings.HasPrefix(path, decoy) {
		t.Fatalf("queued at %s, in a folder this user does not own", path)
	}
	req, done, ok := qc.TakeQueued("%5", digest)
	if !ok || req.Summary != "mine" {
		t.Fatalf("TakeQueued = %+v, %v; want this user's own report", req, ok)
	}
	done()
	if _, _, ok := qc.TakeQueued("%5", digest); ok {
		t.Fatal("a report was taken again")
	}
}
