package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/orch"
)

func TestQueueKeepsAReportUntilTaken(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if _, err := QueueReport(orch.DoneRequest{Pane: "%7", Summary: "did it"}); err != nil {
		t.Fatal(err)
	}
	req, done, ok := TakeQueued("%7")
	if !ok || req.Summary != "did it" || req.Pane != "%7" {
		t.Fatalf("TakeQueued = %+v, %v", req, ok)
	}
	done()
	if _, _, ok := TakeQueued("%7"); ok {
		t.Fatal("the report is still queued after it was handed over")
	}
	if _, err := QueueReport(orch.DoneRequest{Pane: "../x", Summary: "s"}); err == nil {
		t.Fatal("a pane that is not %N was taken as a file name")
	}
}

// TestQueueRefusesAFolderOthersCanWrite: /tmp/st-UID made writable by
// others (another user could have made it first, and swap reports/ under
// st) is not used, neither to queue nor to take.
func TestQueueRefusesAFolderOthersCanWrite(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, err := QueueReport(orch.DoneRequest{Pane: "%3", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(queueDir())
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := TakeQueued("%3"); ok {
		t.Error("a report was taken from a folder others can write to")
	}
	_, err := QueueReport(orch.DoneRequest{Pane: "%4", Summary: "s"})
	if err == nil || !strings.Contains(err.Error(), "not a private folder") {
		t.Errorf("QueueReport into a folder others can write to: %v", err)
	}
}
