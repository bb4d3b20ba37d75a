package machines

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// pushLog is a push service that keeps what it got: each push's title,
// its X-St-Attention header and its body.
type pushLog struct {
	mu     sync.Mutex
	pushes []string
}

func newPushLog(t *testing.T) (*pushLog, string) {
	p := &pushLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.pushes = append(p.pushes, fmt.Sprintf("%s | %s | %s", r.Header.Get("Title"), r.Header.Get("X-St-Attention"), body))
		p.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return p, "ST_PUSH_URL=" + srv.URL + "/push"
}

func (p *pushLog) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.pushes...)
}

func TestMachinesAttentionOfRemoteWorkers(t *testing.T) { eachWay(t, remoteAttention) }

// remoteAttention (issue 34, item 3): a worker on beta that stops at a
// permission prompt keeps its notification on beta (beta pushes it,
// once); alpha, the coordinator's machine, lists the item marked with
// beta, by the id that works here (beta/%N), and pushes nothing; alpha
// has no prompt of it to answer; when the prompt is answered in the
// window on beta, the item closes on beta and is gone on alpha.
func remoteAttention(t *testing.T, way string) {
	c, a, b, pa, alphaPushes, betaPushes := twoWithPushes(t, way)
	task := c.TaskFile("permit.md", "Write a file, asking first.\npermit: echo hi > permitted.txt\nanswer: Wrote it.\nsummary: wrote permitted.txt\n")
	out := must(t)(a.In(pa, "worker", "start", "--machine", "beta", "--agent", "sim", "--task", task, "--name", "asker"))
	id := has(t, out, `(?m)^(beta/%\d+) asker$`)[1]
	bare := strings.TrimPrefix(id, "beta/")

	// Beta: the worker's own item, pushed there once.
	var betaItem api.Attention
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		l := attentionOf(t, b, false)
		for _, it := range l.Items {
			if it.Kind == api.AttnPermission && it.Pane == bare {
				betaItem = it
				return true, ""
			}
		}
		return false, fmt.Sprintf("beta's items: %+v", l.Items)
	})
	// Alpha: the same item, marked with beta, by alpha's id of the worker.
	var item api.Attention
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		l := attentionOf(t, a, false)
		for _, it := range l.Items {
			if it.Pane == id {
				item = it
				return true, ""
			}
		}
		return false, fmt.Sprintf("alpha's items: %+v", l.Items)
	})
	if item.Machine != "beta" || item.Kind != api.AttnPermission || item.Name != "asker" || item.Agent != "sim" ||
		item.Command != "echo hi > permitted.txt" || !strings.Contains(item.Text, "echo hi") || item.Prompt != "" {
		t.Fatalf("alpha's item of beta's prompt: %+v", item)
	}
	if !item.Opened.Equal(betaItem.Opened) {
		t.Errorf("its age on alpha is not beta's: opened %v, on beta %v", item.Opened, betaItem.Opened)
	}
	table := must(t)(a.In(pa, "attention"))
	has(t, table, regexp.QuoteMeta(item.ID)+`\s+permission\s+asker \(`+regexp.QuoteMeta(id)+`\) sim on beta\s+\S+\s+.*echo hi > permitted.txt`)
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		got := betaPushes.got()
		return len(got) == 1 && strings.Contains(got[0], betaItem.ID), fmt.Sprintf("beta's pushes: %q", got)
	})

	// Answered in its window on beta (alpha has no answer of its own to
	// give): closed there, gone here.
	must(t)(b.Tmux.Run("send-keys", "-t", bare, "1"))
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		l := attentionOf(t, a, true)
		for _, it := range l.Items {
			if it.ID == item.ID {
				return it.ClosedBy == "closed there", fmt.Sprintf("alpha's item: %+v (%d open)", it, l.Open)
			}
		}
		return false, fmt.Sprintf("alpha's items: %+v", l.Items)
	})
	out = must(t)(a.In(pa, "worker", "wait", id, "--timeout", "60s"))
	has(t, out, regexp.QuoteMeta(id)+`\s+asker\s+done\s+wrote permitted.txt`)
	if got, err := os.ReadFile(filepath.Join(c.Dir, "beta", "home", "permitted.txt")); err != nil || strings.TrimSpace(string(got)) != "hi" {
		t.Fatalf("the allowed command did not run on beta: %q %v", got, err)
	}
	if l := attentionOf(t, b, false); l.Open != 0 {
		t.Errorf("beta still has open items after the answer and the report: %+v", l.Items)
	}
	onePushEach(t, alphaPushes, betaPushes, item.ID)
}

// twoWithPushes makes alpha (the coordinator's) and beta (taking
// workers) of account acme, each with a push service of its own.
func twoWithPushes(t *testing.T, way string) (c *testutil.Cluster, a, b *testutil.Machine, pa string, alphaPushes, betaPushes *pushLog) {
	c = testutil.NewClusterWay(t, way)
	c.Extra = []string{"ST_HEARTBEAT=1s", "ST_PEER_RETRY=20s"}
	a, b = c.Machine("alpha", "127.0.0.2"), c.Machine("beta", "127.0.0.3")
	alphaPushes, alphaURL := newPushLog(t)
	betaPushes, betaURL := newPushLog(t)
	a.Extra, b.Extra = []string{alphaURL}, []string{betaURL}
	a.Login("acme")
	b.Login("acme")
	pa = a.Up()
	b.Up()
	b.MustST("", "orch", "accept-remote", "on")
	return c, a, b, pa, alphaPushes, betaPushes
}

// onePushEach: beta pushed its worker's prompt once; alpha pushed none of
// it (item, alpha's id of it): alpha's one push is its own run's end.
func onePushEach(t *testing.T, alphaPushes, betaPushes *pushLog, item string) {
	t.Helper()
	if got := betaPushes.got(); len(got) != 1 {
		t.Errorf("beta's pushes: %q, want its item's one", got)
	}
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		got := alphaPushes.got()
		return len(got) == 1 && strings.Contains(got[0], "(run-done)"), fmt.Sprintf("alpha's pushes: %q, want its run's end only", got)
	})
	for _, p := range alphaPushes.got() {
		if strings.Contains(p, "asker") || strings.Contains(p, item) || strings.Contains(p, "permitted") {
			t.Errorf("alpha pushed for a worker on beta (beta pushes its own): %q", p)
		}
	}
}

// attentionOf is machine m's st attention --json (--all with all).
func attentionOf(t *testing.T, m *testutil.Machine, all bool) api.AttentionList {
	t.Helper()
	args := []string{"attention", "--json"}
	if all {
		args = append(args, "--all")
	}
	out, err := m.ST(args...)
	if err != nil {
		t.Fatalf("st attention on %s: %v\n%s", m.Name, err, out)
	}
	var l api.AttentionList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("st attention --json on %s: %v\n%s", m.Name, err, out)
	}
	return l
}
